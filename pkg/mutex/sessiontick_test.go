package mutex

import (
	"fmt"
	"testing"
	"time"
)

// TestCentralSessionLocksHaveNoTimer: a lock whose holder is renewed by
// its member's session and that nobody waits for has no timer of its own
// at the coordinator (the session's end is the timer, expireSessions), so
// a coordinator's Tick looks at none of 1,000 such locks. They used to
// stay in the lock heap with a zero due time, which every Tick took for
// due: each Tick sorted and looked up every held lock's name (10,000
// 255-byte names: most of the coordinator's CPU in TestTenThousandLocks,
// docs/lockd.md): testdata/mutants/76-mutex-central-session-lock-timer.patch.
// A waiter gives the lock a timer again, and the lock is still handed on
// when its holder releases it.
func TestCentralSessionLocksHaveNoTimer(t *testing.T) {
	w := newBench(t, Central, 3, time.Second)
	w.advance(2*time.Second, 5*time.Millisecond) // a coordinator, and its takeover wait
	const held = 1000
	for i := 0; i < held; i++ {
		w.local(2, LocalAcquire, 1, fmt.Sprintf("held-%04d", i))
	}
	for i := 0; len(w.grant) < held; i++ {
		if i > 10_000 {
			t.Fatalf("%d of %d held", len(w.grant), held)
		}
		w.advance(time.Millisecond, time.Millisecond)
	}
	var coord *central
	for _, m := range w.ms {
		if c := m.(*central); c.leading {
			coord = c
		}
	}
	if coord == nil {
		t.Fatal("no coordinator")
	}
	w.advance(time.Second, time.Millisecond) // every lock joins the session
	if s := coord.sessions[2]; s == nil || len(s.locks) != held {
		t.Fatalf("member 2's session at the coordinator: %v, want %d locks", s, held)
	}
	if due := coord.dueLocks(w.now.Add(time.Hour)); len(due) != 0 {
		t.Fatalf("%d of %d session-held locks have a timer at the coordinator (first: %q), want none", len(due), held, due[0])
	}
	// A waiter on one of them: its wait is a timer again, and the
	// release hands the lock on.
	w.local(1, LocalAcquire, 2, "held-0007")
	w.advance(10*time.Millisecond, time.Millisecond)
	if due := coord.dueLocks(w.now.Add(time.Hour)); len(due) != 1 || due[0] != "held-0007" {
		t.Fatalf("locks with a timer once held-0007 has a waiter: %q, want [held-0007]", due)
	}
	w.local(2, LocalRelease, 1, "held-0007")
	for i := 0; !w.grant["1/2/held-0007"]; i++ {
		if i > 1000 {
			t.Fatal("held-0007 was not handed to its waiter after the release")
		}
		w.advance(time.Millisecond, time.Millisecond)
	}
	w.advance(3*time.Second, 5*time.Millisecond) // a loss fails the test (bench.collect)
}
