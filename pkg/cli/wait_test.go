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

// TestWaitSince: a wait that counts from an earlier instant (a one-shot
// client's start, Started) expires that much sooner and reports from it,
// so --timeout D bounds the whole command; a Since in the future counts
// from now.
func TestWaitSince(t *testing.T) {
	since := time.Now().Add(-900 * time.Millisecond)
	w := Wait{Timeout: 2 * time.Second, Since: since}.Start()
	defer w.Stop()
	if w.Since() != since || w.deadline != since.Add(2*time.Second) {
		t.Fatalf("counts from %v to %v, want %v to %v", w.Since(), w.deadline, since, since.Add(2*time.Second))
	}
	if w.Waited() < 900*time.Millisecond {
		t.Fatalf("waited %v right after starting 900 ms late", w.Waited())
	}
	late := Wait{Timeout: time.Second, Since: time.Now().Add(time.Hour)}.Start()
	defer late.Stop()
	if late.deadline.Sub(late.start) != time.Second || late.start.After(time.Now()) {
		t.Fatalf("a future Since: counts from %v", late.start)
	}
	past := Wait{Timeout: 100 * time.Millisecond, Since: time.Now().Add(-time.Second)}.Start()
	defer past.Stop()
	select {
	case <-past.Expired():
	case <-time.After(10 * time.Second):
		t.Fatal("a wait whose limit had passed at its start did not expire")
	}
	if Started().After(time.Now()) || time.Since(Started()) > time.Hour {
		t.Fatalf("Started %v", Started())
	}
}
