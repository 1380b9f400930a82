package mutex

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// TestSimVotingLateAcks: daemon 1's client has its m votes and is
// confirming its token when daemon 1 is paused for two leases; the
// acknowledgements queue up. Resumed, it is handed them before its first
// tick (sim.Options.HeldFirst 1, as a real driver that reads its socket
// before its timer fires). They come too late for the validity they would
// give (0.9 lease from the confirmation), so the client must not enter on
// them: an entry then has no time left, and another client may hold the
// votes' successors with a larger token (seen as a token going backwards
// in TestSimVotingProperties). Found by that test with HeldFirst on.
func TestSimVotingLateAcks(t *testing.T) {
	const lease = 400 * time.Millisecond
	paused := 0
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 22))
		s, _ := votingTrioOpts(seed, r, lease, sim.Options{HeldFirst: 1})
		var bad error
		s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
			if g, ok := ev.(GrantEvent); ok && g.Valid <= 0 && bad == nil {
				bad = fmt.Errorf("seed %d: daemon %d's client entered %q with %v of validity left", seed, id, g.Name, g.Valid)
			}
			return nil
		}
		if err := s.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
		s.Inject(1, Msg{Type: LocalAcquire, Name: "a", Client: 1})
		confirming := func() bool {
			w := s.Machine(1).(*voting).head("a")
			return w != nil && w.phase == voteConfirming
		}
		for i := 0; i < 2000 && !confirming(); i++ { // at most 200 ms
			if err := s.RunFor(100 * time.Microsecond); err != nil {
				t.Fatal(err)
			}
		}
		if !confirming() {
			continue
		}
		s.Pause(1)
		paused++
		if err := s.RunFor(2 * lease); err != nil {
			t.Fatal(err)
		}
		s.Resume(1)
		if err := s.RunFor(2 * lease); err != nil {
			t.Fatal(err)
		}
		if bad != nil {
			t.Fatal(bad)
		}
	}
	if paused < 25 {
		t.Fatalf("daemon 1 was paused while confirming in only %d of 50 seeds: the schedule misses its aim", paused)
	}
	t.Logf("%d seeds: daemon 1 paused while confirming, resumed with its acknowledgements first; no entry without validity", paused)
}
