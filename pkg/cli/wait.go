package cli

import (
	"fmt"
	"io"
	"os"
	"time"
)

// A client that asks its daemon for a resource (a lock, a ticket) and
// waits for it follows one Wait: it gives up at --timeout, or soon after
// asking with --nonblock, and while it waits it says on stderr what it
// waits for, a second after asking and then at a slow interval, unless
// --quiet.
type Wait struct {
	Timeout  time.Duration // give up after this long; 0 waits for ever
	NonBlock bool          // the daemon answers at once or not at all
	Quiet    bool          // say nothing while waiting
	// Since is when the wait counts from (zero: when it starts). A
	// one-shot client passes Started(): --timeout D is a promise about
	// the whole command, which a user times from its start, so the time
	// spent starting (flags, the watchdog, connecting), long on a busy
	// host, comes out of D rather than on top of it.
	Since time.Time
}

// started is when this process's Go code began to run: package
// initialisation, before main.
var started = time.Now()

// Started is when this process began (its packages' initialisation).
func Started() time.Time { return started }

const (
	// NonBlockLimit bounds a --nonblock request: a daemon that has not
	// answered within it (stopped, starved, or waiting on a peer to decide)
	// is taken as unable to answer.
	NonBlockLimit = time.Second
	// FirstReport is when a client that still waits first says why.
	FirstReport = time.Second
	// ReportEvery is the slow interval of the reports after the first.
	ReportEvery = 15 * time.Second
	// ProbeWait bounds a status question asked for a report.
	ProbeWait = 500 * time.Millisecond
)

// Waiter is one wait under a Wait.
type Waiter struct {
	start, deadline time.Time // deadline zero: none
	expire, report  *time.Timer
	quiet           bool
	out             io.Writer
}

// Start begins a wait now.
func (w Wait) Start() *Waiter {
	now := time.Now()
	wt := &Waiter{start: now, quiet: w.Quiet, out: os.Stderr}
	if !w.Since.IsZero() && w.Since.Before(now) {
		wt.start = w.Since
	}
	limit := w.Timeout
	if w.NonBlock && (limit <= 0 || limit > NonBlockLimit) {
		limit = NonBlockLimit
	}
	if limit > 0 {
		wt.deadline = wt.start.Add(limit)
		wt.expire = time.NewTimer(wt.deadline.Sub(now))
	}
	if !w.NonBlock && !w.Quiet && (limit <= 0 || limit > FirstReport) {
		wt.report = time.NewTimer(wt.start.Add(FirstReport).Sub(now))
	}
	return wt
}

// Expired fires when the wait has lasted as long as it may.
func (w *Waiter) Expired() <-chan time.Time {
	if w.expire == nil {
		return nil
	}
	return w.expire.C
}

// Report fires when it is time to say what the wait is for; Say then
// says it and sets the next report.
func (w *Waiter) Report() <-chan time.Time {
	if w.report == nil {
		return nil
	}
	return w.report.C
}

// Waited is how long the wait has lasted.
func (w *Waiter) Waited() time.Duration { return time.Since(w.start).Round(time.Millisecond) }

// Since is when the wait began.
func (w *Waiter) Since() time.Time { return w.start }

// Say prints "<tool>: waited <d> for <what>: <why>" on stderr (nothing
// with Quiet), d being how long the wait had lasted at at (when Report
// fired), in whole seconds, and sets the next report ReportEvery later.
func (w *Waiter) Say(tool, what, why string, at time.Time) {
	if !w.quiet {
		fmt.Fprintf(w.out, "%s: waited %v for %s: %s\n", tool, at.Sub(w.start).Round(time.Second), what, why)
	}
	if w.report != nil {
		w.report.Reset(ReportEvery)
	}
}

// ProbeBudget is how long the cause of an expired wait may be looked for
// (a status question to the daemon) without breaking the promise that
// --timeout D ends within D plus 10%: a twentieth of the limit, at most
// ProbeWait and at least 10 ms.
func (w *Waiter) ProbeBudget() time.Duration {
	if w.deadline.IsZero() {
		return ProbeWait
	}
	return min(max(w.deadline.Sub(w.start)/20, 10*time.Millisecond), ProbeWait)
}

// ReportBudget bounds a status question asked for a report: it must not
// hold the client past its own deadline.
func (w *Waiter) ReportBudget() time.Duration {
	if w.deadline.IsZero() {
		return ProbeWait
	}
	return min(max(time.Until(w.deadline), 10*time.Millisecond), ProbeWait)
}

// Stop releases the timers.
func (w *Waiter) Stop() {
	if w.expire != nil {
		w.expire.Stop()
	}
	if w.report != nil {
		w.report.Stop()
	}
}
