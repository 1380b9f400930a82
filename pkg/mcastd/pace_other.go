//go:build !linux

package mcastd

import "time"

// newPacer paces from start, one send per gap, by a Go ticker (pace.go).
func newPacer(start time.Time, gap time.Duration) pacer { return newTickPacer(start, gap) }
