package cli

import "time"

// Lease tracks, on a client's own clock, how long a grant from a daemon
// on the same host is good for. It is extended by the daemon's renewals;
// if they stop (the daemon is paused or dead) the client gives up when
// the time is out, without waiting to be told.
type Lease struct{ until, tick, settle time.Time }

// NewLease starts a lease that runs until until. The checks' clock starts
// now too: a process stopped before its first check must still find that
// check late, and read what the daemon sent meanwhile before deciding.
func NewLease(until time.Time) *Lease { return &Lease{tick: time.Now(), until: until} }

// Extend moves the end of the lease later (never earlier).
func (l *Lease) Extend(until time.Time) {
	if until.After(l.until) {
		l.until = until
	}
}

// Until is when the lease ends unless extended.
func (l *Lease) Until() time.Time { return l.until }

// CheckEvery is how often a client judges its lease.
const CheckEvery = 10 * time.Millisecond

// Overdue is the periodic check. A check that comes late means this
// process was itself stopped (SIGSTOP) or starved: the daemon's queued
// extensions are read first, for 50 ms, before the checks decide again.
func (l *Lease) Overdue() bool {
	now := time.Now()
	if now.Sub(l.tick) > 10*CheckEvery {
		l.settle = now.Add(5 * CheckEvery)
	}
	l.tick = now
	return !now.Before(l.settle) && now.After(l.until)
}
