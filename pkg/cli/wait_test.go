package cli

import (
	"strings"
	"testing"
	"time"
)

// TestWaitLimits: --nonblock is bounded by NonBlockLimit (or a shorter
// --timeout), a wait without either has no deadline, reports come only
// for waits that may last past FirstReport and not with Quiet, and the
// search for an expired wait's cause keeps within a twentieth of it.
func TestWaitLimits(t *testing.T) {
	for _, c := range []struct {
		w        Wait
		limit    time.Duration // 0: none
		reports  bool
		probeMax time.Duration
	}{
		{Wait{}, 0, true, ProbeWait},
		{Wait{NonBlock: true}, NonBlockLimit, false, NonBlockLimit / 20},
		{Wait{NonBlock: true, Timeout: 300 * time.Millisecond}, 300 * time.Millisecond, false, 15 * time.Millisecond},
		{Wait{NonBlock: true, Timeout: time.Minute}, NonBlockLimit, false, NonBlockLimit / 20},
		{Wait{Timeout: 2 * time.Second}, 2 * time.Second, true, 100 * time.Millisecond},
		{Wait{Timeout: 500 * time.Millisecond}, 500 * time.Millisecond, false, 25 * time.Millisecond},
		{Wait{Timeout: time.Hour}, time.Hour, true, ProbeWait},
		{Wait{Timeout: 2 * time.Second, Quiet: true}, 2 * time.Second, false, 100 * time.Millisecond},
	} {
		w := c.w.Start()
		var limit time.Duration
		if !w.deadline.IsZero() {
			limit = w.deadline.Sub(w.start)
		}
		if limit != c.limit || (w.Expired() != nil) != (c.limit > 0) || (w.Report() != nil) != c.reports || w.ProbeBudget() != c.probeMax {
			t.Errorf("%+v: limit %v expires %v reports %v probe %v; want %v %v %v", c.w, limit, w.Expired() != nil, w.Report() != nil, w.ProbeBudget(), c.limit, c.reports, c.probeMax)
		}
		w.Stop()
	}
}

// TestWaitSay: a report names the tool, how long the wait had lasted when
// it was due, what it waits for and why; Quiet says nothing.
func TestWaitSay(t *testing.T) {
	var out strings.Builder
	w := Wait{}.Start()
	defer w.Stop()
	w.out = &out
	w.Say("lockd", "db", "held by member 2", w.Since().Add(1010*time.Millisecond))
	if got := out.String(); got != "lockd: waited 1s for db: held by member 2\n" {
		t.Fatalf("report %q", got)
	}
	out.Reset()
	q := Wait{Quiet: true}.Start()
	defer q.Stop()
	q.out = &out
	q.Say("lockd", "db", "held", time.Now())
	if out.Len() != 0 {
		t.Fatalf("--quiet printed %q", out.String())
	}
}
