package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// superseded settles three members, then makes member 3 start a new
// incarnation on its own (as after a MsgGone, an install it takes for its
// removal, or an EVS view of its own) and returns how long the leader
// took to install a view holding the new incarnation.
func superseded(t *testing.T, bug bug) (time.Duration, error) {
	t.Helper()
	ids := []node.ID{1, 2, 3}
	s, _ := countingGroup(t, ids, Config{bug: bug})
	if err := s.RunFor(2 * time.Second); err != nil {
		return 0, err
	}
	g := func(id node.ID) *Group { return s.Machine(id).(*Group) }
	if len(g(1).view.Members) != 3 {
		return 0, fmt.Errorf("not settled: %v", g(1).view.Members)
	}
	var swapped time.Time
	start := s.Now()
	s.OnEvent = func(now time.Time, id node.ID, ev node.Event) error {
		if e, ok := ev.(ViewEvent); ok && id == 1 && swapped.IsZero() {
			for _, m := range e.Members {
				if m.ID == 3 && m.Inc == g(3).me.Inc {
					swapped = now
				}
			}
		}
		return nil
	}
	g(3).now = s.Now()
	g(3).rejoin(g(3).view.ID, nil, CauseGone)
	if err := s.RunFor(2 * time.Second); err != nil {
		return 0, err
	}
	if swapped.IsZero() {
		return 0, fmt.Errorf("the new incarnation of 3 never joined")
	}
	return swapped.Sub(start), nil
}

// TestRejoinReplacesSupersededIncarnation: the view holds an incarnation
// of member 3 that can never answer again (its process runs a later one);
// once the later one's join reaches the leader, the change that swaps it
// in must not wait out the old one's silence (Suspect, 160 ms): within five
// Periods (100 ms). The planted bugWaitSuperseded (the old rule) waits the
// whole Suspect and a tick.
func TestRejoinReplacesSupersededIncarnation(t *testing.T) {
	took, err := superseded(t, 0)
	if err != nil {
		t.Fatal(err)
	}
	limit := 5 * (Config{}).period()
	t.Logf("the new incarnation was in the leader's view %v after it started (limit %v, Suspect %v)", took, limit, (Config{}).suspect())
	if took > limit {
		t.Fatalf("the leader waited %v for the superseded incarnation's answer before taking the new one in", took)
	}
	old, err := superseded(t, bugWaitSuperseded)
	if err != nil {
		t.Fatal(err)
	}
	if old <= limit {
		t.Fatalf("planted bugWaitSuperseded: swapped in %v, within the limit: the test cannot tell the rules apart", old)
	}
	t.Logf("planted bugWaitSuperseded: %v", old)
}
