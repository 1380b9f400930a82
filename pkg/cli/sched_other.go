//go:build !linux

package cli

import (
	"errors"
	"syscall"
)

// SetRealtime is Linux-only (sched.go); elsewhere it changes nothing.
func SetRealtime(prio int) error {
	return errors.New("realtime scheduling is implemented on Linux only")
}

// killGroup sends SIGKILL to process group pgid (sched_linux.go also
// gives what it killed the CPU to die).
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

func realtimeOn() int { return 0 }
