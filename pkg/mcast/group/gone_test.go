package group

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// goneStale: four members (EVS, where laggard answers every stale frame
// of a member's other incarnation with MsgGone) settle, member 3 in its
// second incarnation; member 4 leaves, and
// when member 2 installs the view without it the install to member 3 is
// lost, so that 3 is one view behind. A stale frame of 3's previous
// incarnation then reaches 2, which answers it with MsgGone. It returns how
// many times member 3 took itself for removed.
func goneStale(t *testing.T, bug bug) (int, error) {
	t.Helper()
	ids := []node.ID{1, 2, 3, 4}
	s, _ := countingGroup(t, ids, Config{EVS: true, bug: bug})
	if err := s.RunFor(2 * time.Second); err != nil {
		return 0, err
	}
	g := func(id node.ID) *Group { return s.Machine(id).(*Group) }
	// Member 3 starts a second incarnation, whose frames the first one's
	// may still trail.
	first := g(3).me
	g(3).now = s.Now()
	g(3).rejoin(g(3).view.ID, nil, CauseGone)
	if err := s.RunFor(2 * time.Second); err != nil {
		return 0, err
	}
	v := g(2).view
	if len(v.Members) != 4 || !slices.Contains(v.Members, g(3).me) {
		return 0, fmt.Errorf("not settled: %v", v.Members)
	}
	stale := Msg{Type: MsgStatus, View: v.ID - 1, Inc: first.Inc}
	removed, behind := 0, false
	s.OnEvent = func(now time.Time, id node.ID, ev node.Event) error {
		switch e := ev.(type) {
		case ViewEvent:
			if id == 2 && e.View == v.ID+1 && g(3).view.ID == v.ID {
				behind = s.DropInFlight(1, 3) > 0
				s.At(now, func() { g(2).Step(now, node.Envelope[Msg]{From: 3, To: 2, Msg: stale}) })
			}
		case RemovedEvent:
			if id == 3 {
				t.Logf("%v: member 3 removed from view %d (%s)", now.Format("05.000"), e.View, e.Cause)
				removed++
			}
		}
		return nil
	}
	s.Inject(4, Msg{Type: MsgEnd})
	if err := s.RunFor(2 * time.Second); err != nil {
		return 0, err
	}
	if !behind {
		return 0, fmt.Errorf("member 3 was not behind when the stale frame came")
	}
	if w := g(1).view; len(w.Members) != 3 || w.ID <= v.ID {
		return 0, fmt.Errorf("no view of 1,2,3 after 4 left: view %d %v", w.ID, w.Members)
	}
	return removed, nil
}

// TestGoneForEarlierIncarnation: a MsgGone answers a frame of one
// incarnation, and names it; a later incarnation of the same process, one
// view behind (its install on the way), must not take it for news of
// itself and rejoin (the planted bugGoneAnyInc does, as every member did
// before MsgGone named its addressee: in the EVS partition tests it was
// most of the new incarnations).
func TestGoneForEarlierIncarnation(t *testing.T) {
	n, err := goneStale(t, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("member 3 took a MsgGone for its earlier incarnation as its own removal (%d times)", n)
	}
	n, err = goneStale(t, bugGoneAnyInc)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("planted bugGoneAnyInc: member 3 did not rejoin: the test cannot tell the rules apart")
	}
}

// TestGoneUnnamed: a MsgGone without an incarnation (from a sender that
// predates the field) still removes its receiver, as it always did.
func TestGoneUnnamed(t *testing.T) {
	ids := []node.ID{1, 2, 3}
	s, _ := countingGroup(t, ids, Config{})
	if err := s.RunFor(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	g3 := s.Machine(3).(*Group)
	inc := g3.me.Inc
	g3.handle(2, Msg{Type: MsgGone, View: g3.view.ID + 1})
	if g3.inView || g3.me.Inc == inc {
		t.Fatalf("an unnamed MsgGone from a member of the view did not remove member 3")
	}
}
