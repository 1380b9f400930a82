package ticket

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// vouchesAfterChurn: a settled core of five processes on twelve tickets
// (k = 1) in which, twenty times, a process other than the founder leaves
// and joins again, mostly at another ticket, so that its neighbours hear
// it at place after place. It returns the most vouches any live process
// keeps for places outside its L at the end. Theorem 4.1 is checked
// after every event (settledPoolWith's invariant).
func vouchesAfterChurn(seed uint64, b bug) (int, error) {
	p, err := settledPoolWith(seed, 5, 12, 1, 0, 300*time.Millisecond, 0, func(c *Config) { c.bug = b })
	if err != nil {
		return 0, err
	}
	p.s.OnEvent = nil
	for range 20 {
		id := p.ids[1+p.r.IntN(len(p.ids)-1)]
		p.s.Inject(id, Msg{Type: MsgLeave})
		if err := p.s.RunFor(500 * time.Millisecond); err != nil {
			return 0, err
		}
		p.s.Inject(id, Msg{Type: MsgJoin})
		if err := p.s.RunFor(1500 * time.Millisecond); err != nil {
			return 0, err
		}
	}
	most := 0
	for _, id := range p.ids {
		m := p.machines[id]
		if !p.s.Alive(id) || !m.inRing() {
			continue
		}
		outside := 0
		for o := range m.alive {
			if !slices.Contains(m.preds, o) {
				outside++
			}
		}
		most = max(most, outside)
	}
	return most, nil
}

// TestSimVouchesForgotten: a long-lived process does not keep a vouch
// for every place it ever heard from (pruneVouches): after twenty leaves
// and joins around it, at most 2k+1 vouches outside its L remain (those
// recent enough to still matter to takeR). The planted bugKeepVouches
// keeps them all.
func TestSimVouchesForgotten(t *testing.T) {
	worst := 0
	simtest.EverySeed(t, func(seed uint64) error {
		n, err := vouchesAfterChurn(seed, 0)
		if err != nil {
			return err
		}
		worst = max(worst, n)
		if n > 3 {
			return fmt.Errorf("a process keeps %d vouches for places outside its L after 20 leaves and joins (at most 2k+1 = 3)", n)
		}
		return nil
	})
	t.Logf("at most %d vouches outside L", worst)
	caught := 0
	for seed := uint64(1); seed <= 5; seed++ {
		n, err := vouchesAfterChurn(seed, bugKeepVouches)
		if err != nil {
			t.Fatalf("seed %d with bugKeepVouches: %v", seed, err)
		}
		if n > 3 {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("bugKeepVouches (no vouch ever forgotten) was not caught in 5 seeds")
	}
	t.Logf("bugKeepVouches caught in %d of 5 seeds", caught)
}
