package group

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// delivery: a DeliverEvent at a member, with the view it was in then.
type delivery struct {
	at, sender node.ID
	inc, seq   uint64
	payload    string
	view       uint64
	leader     Member
}

func (d delivery) String() string {
	return fmt.Sprintf("%d delivers %d/%d.%d %q in view %d led by %v", d.at, d.sender, d.inc, d.seq, d.payload, d.view, d.leader)
}

// sameNumberViews (extended virtual synchrony) leaves two components in
// views of the same number, each listing the same two joiners, and each
// joiner in a different one of the two views.
//
// Eight processes. 7 and 8 are cut off, and 1..6 settle in a view
// without them. Then A = {1,2,3} and B = {4,5,6} split and each installs
// a view of its own, numbered alike (group_evs.go). 7 and 8 are let in:
// they hear both components, and both leaders take both joins (with EVS
// a leader takes every join it hears, relayed or not: onJoin). Once both
// leaders hold both, 7 is cut from B and 8 from A, so each joiner hears
// one install only (a joiner installs any install that names it:
// onInstall), and 7 and 8 still hear each other.
func sameNumberViews(t *testing.T, cfg Config) (sm *sim.Sim[Msg], g func(node.ID) *Group, delivered *[]delivery, err error) {
	t.Helper()
	ids := []node.ID{1, 2, 3, 4, 5, 6, 7, 8}
	cfg.EVS = true
	sm, _ = countingGroup(t, ids, cfg)
	g = func(id node.ID) *Group { return sm.Machine(id).(*Group) }
	delivered = new([]delivery)
	sm.OnEvent = func(now time.Time, id node.ID, ev node.Event) error {
		if e, ok := ev.(ViewEvent); ok && testing.Verbose() {
			t.Logf("%v %d: %+v", now.Format("05.000"), id, e)
		}
		if e, ok := ev.(DeliverEvent); ok {
			v := g(id).view
			*delivered = append(*delivered, delivery{id, e.Sender, e.Inc, e.Seq, string(e.Payload), v.ID, v.Members[0]})
		}
		return nil
	}
	sm.Isolate(7)
	sm.Isolate(8)
	if err := sm.RunFor(2 * time.Second); err != nil {
		return nil, nil, nil, err
	}
	if n := len(g(1).view.Members); n != 6 {
		return nil, nil, nil, fmt.Errorf("not settled: view %d %v", g(1).view.ID, g(1).view.Members)
	}
	A, B := []node.ID{1, 2, 3}, []node.ID{4, 5, 6}
	sm.Partition(A, B, []node.ID{7}, []node.ID{8})
	if err := sm.RunFor(2 * time.Second); err != nil {
		return nil, nil, nil, err
	}
	if g(1).view.ID != g(4).view.ID || len(g(1).view.Members) != 3 || len(g(4).view.Members) != 3 {
		return nil, nil, nil, fmt.Errorf("the components did not number alike: A in view %d %v, B in view %d %v", g(1).view.ID, g(1).view.Members, g(4).view.ID, g(4).view.Members)
	}
	sm.Heal()
	for _, a := range A {
		for _, b := range B {
			sm.Cut(a, b)
			sm.Cut(b, a)
		}
	}
	joined := func(l node.ID) bool {
		n := 0
		for m := range g(l).joins {
			if m.ID == 7 || m.ID == 8 {
				n++
			}
		}
		return n == 2
	}
	for i := 0; i < 2000 && !(joined(1) && joined(4)); i++ {
		if err := sm.RunFor(time.Millisecond); err != nil {
			return nil, nil, nil, err
		}
	}
	if !joined(1) || !joined(4) {
		return nil, nil, nil, fmt.Errorf("the leaders did not both take both joins: %v, %v", g(1).joins, g(4).joins)
	}
	for _, b := range B {
		sm.Cut(7, b)
		sm.Cut(b, 7)
	}
	for _, a := range A {
		sm.Cut(8, a)
		sm.Cut(a, 8)
	}
	for i := 0; i < 2000 && !(g(7).inView && g(8).inView); i++ {
		if err := sm.RunFor(time.Millisecond); err != nil {
			return nil, nil, nil, err
		}
	}
	return sm, g, delivered, nil
}

// foreignDeliveries runs sameNumberViews, has each joiner multicast once
// in the view it installed, and returns the deliveries of a message in a
// view other than the one it was sent in, a view being its number and
// its leader (group_evs.go; CheckViews keys views so), and how many
// deliveries there were.
func foreignDeliveries(t *testing.T, cfg Config) (bad []delivery, all int) {
	t.Helper()
	s, g, delivered, err := sameNumberViews(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	v7, v8 := g(7).view, g(8).view
	t.Logf("7 in view %d %v; 8 in view %d %v", v7.ID, v7.Members, v8.ID, v8.Members)
	if !g(7).inView || !g(8).inView || v7.ID != v8.ID || v7.Members[0] == v8.Members[0] ||
		!slices.Contains(v7.Members, g(8).me) || !slices.Contains(v8.Members, g(7).me) {
		t.Fatalf("the schedule did not give the joiners two views numbered alike that list both: 7 in %d %v, 8 in %d %v", v7.ID, v7.Members, v8.ID, v8.Members)
	}
	s.Inject(7, Msg{Type: MsgSend, Items: []mcast.Item{{Payload: []byte("7 in A")}}})
	s.Inject(8, Msg{Type: MsgSend, Items: []mcast.Item{{Payload: []byte("8 in B")}}})
	if err := s.RunFor(time.Second); err != nil {
		t.Fatal(err)
	}
	sentIn := map[node.ID]Member{7: v7.Members[0], 8: v8.Members[0]}
	for _, d := range *delivered {
		if l, ok := sentIn[d.sender]; ok && d.view == v7.ID && d.leader != l {
			bad = append(bad, d)
		}
	}
	return bad, len(*delivered)
}

// TestEVSSameNumberForeignFrames (issue 31): with EVS two components may
// number views alike, and a joiner both took in is listed in both views
// but installs one. Two such joiners split across the two views are each
// listed in the other's view as the other sees it; were frames to name
// their view by number only, each would take the other's frames of the
// other component's view as its own view's, deliver them and relay them
// to its component. Frames name their view's leader too (Msg.Lead) and
// such a frame is dropped: no message is delivered outside the view it
// was sent in. The planted bugViewByNumber (the check skipped) gives 8
// such deliveries (1, 2, 3, 7 deliver 8's message; 4, 5, 6, 8 deliver
// 7's).
func TestEVSSameNumberForeignFrames(t *testing.T) {
	bad, all := foreignDeliveries(t, Config{})
	for _, d := range bad {
		t.Errorf("%s: sent in another view of that number", d)
	}
	if all == 0 {
		t.Fatal("nothing delivered")
	}
	bad, _ = foreignDeliveries(t, Config{bug: bugViewByNumber})
	if len(bad) == 0 {
		t.Fatal("planted bugViewByNumber: no delivery outside the sending view: the test cannot tell")
	}
	t.Logf("planted bugViewByNumber: %d deliveries outside the sending view, e.g. %s", len(bad), bad[0])
}
