//go:build !linux

package cli

import "errors"

// SetRealtime is Linux-only (sched.go); elsewhere it changes nothing.
func SetRealtime(prio int) error {
	return errors.New("realtime scheduling is implemented on Linux only")
}
