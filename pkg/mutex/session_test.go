package mutex

import (
	"fmt"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// TestSimCentralSessionTrustCaught: a coordinator that answers every
// session renewal as matched renews locks it does not count in the
// member's session — one whose joining renewal was lost, which it then
// lets run out and grants to another. The exclusion checker must catch it.
func TestSimCentralSessionTrustCaught(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator sweep: run without -race")
	}
	simtest.CatchOne(t, "session renewal matched whatever the digest", 300, func(seed uint64) error {
		_, err := runWorldWith(seed, Central, false, func(w *world) { w.sessionTrust = true })
		return err
	}, "two holders")
}

// TestCentralSessionWorkPerRenewal: once a member's 10,000 locks have
// joined its session, the coordinator takes no per-lock renewal records
// from it: one session message per eighth of a lease renews them all, and
// every lock is still held with most of a lease to go.
func TestCentralSessionWorkPerRenewal(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 locks")
	}
	const n = 10_000
	w := newBench(t, Central, 3, time.Second)
	w.advance(2*time.Second, 5*time.Millisecond)
	for i := 0; i < n; i++ {
		w.local(2, LocalAcquire, 1, fmt.Sprintf("%0255d", i))
	}
	for i := 0; len(w.grant) < n; i++ {
		if i > 10_000 {
			t.Fatalf("%d of %d held", len(w.grant), n)
		}
		w.advance(time.Millisecond, time.Millisecond)
	}
	w.advance(time.Second, time.Millisecond) // every lock joins the session
	records, sessions := 0, 0
	w.onReady = func(id node.ID, rd node.Ready[Msg]) {
		for _, env := range rd.Msgs {
			if env.From != 2 {
				continue
			}
			switch env.Msg.Type {
			case MsgRenew:
				records += len(env.Msg.Locks)
			case MsgSession:
				sessions++
			}
		}
	}
	w.advance(2*time.Second, time.Millisecond) // a loss fails the test (bench.collect)
	t.Logf("over two leases: %d per-lock renewal records, %d session renewals (per-lock renewals: %d records)", records, sessions, 16*n)
	if records != 0 || sessions < 14 || sessions > 18 {
		t.Fatalf("over two leases the member sent %d renewal records and %d session renewals, want 0 and 16", records, sessions)
	}
	var held int
	for _, h := range w.ms[2].Holdings(w.now) {
		if h.Client == 1 && h.Until.Sub(w.now) > time.Second/2 {
			held++
		}
	}
	if held != n {
		t.Fatalf("%d of %d locks held with half a lease to go", held, n)
	}
}

// TestCentralSessionLostRelease: a release of a lock in the session is
// lost; the session renewals no longer match, the member sends the
// release again, and the lock is granted to the next waiter within half a
// lease (per-lock renewals: once the lock's lease ran out, a lease), not
// renewed with the rest of the session for ever.
func TestCentralSessionLostRelease(t *testing.T) {
	w := newBench(t, Central, 3, time.Second)
	w.advance(2*time.Second, 5*time.Millisecond)
	w.local(2, LocalAcquire, 1, "a")
	w.local(2, LocalAcquire, 1, "b")
	w.advance(time.Second, time.Millisecond) // both join the session
	dropped := 0
	w.drop = func(env node.Envelope[Msg]) bool {
		if env.Msg.Type == MsgRelease && env.Msg.Name == "a" && dropped == 0 {
			dropped++
			return true
		}
		return false
	}
	w.local(2, LocalRelease, 1, "a")
	w.local(3, LocalAcquire, 7, "a")
	for i := 0; i < 500 && !w.grant["3/7/a"]; i++ {
		w.advance(time.Millisecond, time.Millisecond)
	}
	if dropped != 1 || !w.grant["3/7/a"] {
		t.Fatalf("release dropped %d times; waiter granted: %v", dropped, w.grant["3/7/a"])
	}
}
