package group

import (
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestStaleJoinIgnored: a join from an earlier incarnation of a member
// whose later incarnation is in the view (a duplicated or late frame of
// the join it sent before it was removed) is ignored. Taken as a join,
// the next change swapped the live member for its dead incarnation: the
// live one left out of its live component, never suspected.
func TestStaleJoinIgnored(t *testing.T) {
	ids := []node.ID{1, 2, 3}
	s, _ := countingGroup(t, ids, Config{})
	if err := s.RunFor(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	g := func(id node.ID) *Group { return s.Machine(id).(*Group) }
	before := g(1).view
	if len(before.Members) != 3 {
		t.Fatalf("not settled: view %d %v", before.ID, before.Members)
	}
	live := before.Members[g(1).pos[3]]
	g(1).onJoin(3, Member{ID: 3, Inc: live.Inc - 1}, false)
	if len(g(1).joins) != 0 {
		t.Fatalf("the leader took the stale join: %v", g(1).joins)
	}
	// A leave of member 2 forces a change: member 3 must stay as it is.
	s.Inject(2, Msg{Type: MsgEnd})
	if err := s.RunFor(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	v := g(1).view
	if v.ID == before.ID {
		t.Fatalf("no change after member 2 left: view %d %v", v.ID, v.Members)
	}
	if i, ok := g(1).pos[3]; !ok || v.Members[i] != live {
		t.Fatalf("view %d %v: member %d/%d is not in it as it was", v.ID, v.Members, live.ID, live.Inc)
	}
}
