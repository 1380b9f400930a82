package mutex

import (
	"fmt"
	"testing"
	"time"
)

// TestSummaryNotSortedPerPing: the coordinator's pings (every quarter
// promise) carry its lock table in name order, and sort it only when a
// lock was added or forgotten since: 1,000 held locks renewed over four
// leases cost no sort; one new lock costs one.
func TestSummaryNotSortedPerPing(t *testing.T) {
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
	w.advance(100*time.Millisecond, 5*time.Millisecond) // the last grants' pings
	before, pings := coord.namesSorts, coord.pingSeq
	w.advance(4*time.Second, 5*time.Millisecond)
	if coord.pingSeq-pings < 8 {
		t.Fatalf("only %d pings in four leases", coord.pingSeq-pings)
	}
	if got := coord.namesSorts - before; got != 0 {
		t.Errorf("%d sorts over %d pings with no lock added or forgotten, want 0", got, coord.pingSeq-pings)
	}
	if rows := coord.summary(); len(rows) != maxLocks || rows[0].Name != "held-0000" || rows[1].Name != "held-0001" {
		t.Errorf("summary: %d rows starting %v, want %d in name order", len(rows), rows[:2], maxLocks)
	}
	w.acquire(1, 2, "aaa-new")
	w.advance(time.Second, 5*time.Millisecond)
	if got := coord.namesSorts - before; got < 1 {
		t.Error("a new lock did not re-sort the table")
	}
	if rows := coord.summary(); rows[0].Name != "aaa-new" {
		t.Errorf("summary starts with %q after a new lock, want aaa-new", rows[0].Name)
	}
}
