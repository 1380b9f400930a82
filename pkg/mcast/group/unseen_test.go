package group

import (
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestLeaderTakesHighestAccepted: a view-change leader whose promises
// report changes accepted under different ballots re-proposes the one of
// the highest ballot (Paxos phase 1; Nita-Rotaru's CS7610 notes: the next
// leader takes the highest accepted change): a member may have installed
// it. The leader-crash schedule re-proposes one change under growing
// ballots, so its promises never carry two different changes; here they
// do. Member 2 accepted change A under ballot 1/5, member 3 change B
// under 2/4, members 4 and 5 are silent: B must be committed.
func TestLeaderTakesHighestAccepted(t *testing.T) {
	const inc = 1 << 32
	g, err := New(Config{ID: 1, Inc: inc, Found: true})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(100, 0)
	g.now = t0
	var members []Member
	for id := node.ID(1); id <= 5; id++ {
		members = append(members, Member{id, inc})
	}
	g.install(View{ID: 5, Members: members})
	g.Ready()
	g.now = t0.Add(10 * time.Second) // 4 and 5 long silent
	zero := make([]uint64, 5)
	next := func(ids ...node.ID) *Change {
		c := &Change{Next: View{ID: 6}, Survivors: ids, Cut: slices.Clone(zero)}
		for _, id := range ids {
			c.Next.Members = append(c.Next.Members, Member{id, inc})
		}
		return c
	}
	a, b := next(1, 2, 3), next(1, 2, 4)
	g.lead = &lead{ballot: Ballot{3, 1}, started: g.now, acks: map[node.ID]Msg{
		1: {Type: MsgAck, Recv: slices.Clone(zero)},
		2: {Type: MsgAck, Recv: slices.Clone(zero), Change: a, Accepted: Ballot{1, 5}},
		3: {Type: MsgAck, Recv: slices.Clone(zero), Change: b, Accepted: Ballot{2, 4}},
	}}
	g.tryCommit()
	committed := false
	for _, env := range g.Ready().Msgs {
		if env.Msg.Type != MsgCommit {
			continue
		}
		committed = true
		if got := env.Msg.Change.Next.Members; !slices.Equal(got, b.Next.Members) {
			t.Fatalf("committed next view %v, want %v (accepted under the higher ballot)", got, b.Next.Members)
		}
	}
	if !committed {
		t.Fatal("no commit sent")
	}
}

// TestPromiseCountsForItsBallot: a promise (MsgAck) answers one ballot; a
// late one for the leader's earlier attempt says nothing of what the
// member accepted since, so it must not count for the current attempt
// (Paxos phase 1). The fault runs' retries send each attempt's acks
// close together, so a stale one has always matched what a fresh one
// would say.
func TestPromiseCountsForItsBallot(t *testing.T) {
	const inc = 1 << 32
	g, err := New(Config{ID: 1, Inc: inc, Found: true})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(100, 0)
	g.now = t0
	members := []Member{{1, inc}, {2, inc}, {3, inc}}
	g.install(View{ID: 5, Members: members})
	g.Ready()
	g.lead = &lead{ballot: Ballot{7, 1}, started: t0, acks: map[node.ID]Msg{}}
	for _, b := range []Ballot{{6, 1}, {7, 1}} {
		ack := Msg{Type: MsgAck, View: 5, Inc: inc, Ballot: b, Recv: make([]uint64, 3)}
		if err := g.Step(t0, node.Envelope[Msg]{From: 2, To: 1, Msg: ack}); err != nil {
			t.Fatal(err)
		}
		if _, counted := g.lead.acks[2]; counted != (b == g.lead.ballot) {
			t.Fatalf("a promise for ballot %v, the leader at %v: counted %v", b, g.lead.ballot, counted)
		}
	}
}

// TestCommitBelowPromiseRefused: after promising ballot 5/3, a member
// accepts no commit of a lower ballot, 5/2 included (the same number from
// a lower leader): Paxos phase 2 accepts nothing below the promise, or a
// change the promised leader cannot learn of could be installed; and it
// tells that leader of the promise, so that it steps back at once rather
// than resend its commit until it suspects someone. Ballot
// numbers clash only when two leaders start attempts at once, which the
// fault runs never line up.
func TestCommitBelowPromiseRefused(t *testing.T) {
	const inc = 1 << 32
	for _, b := range []Ballot{{4, 3}, {5, 2}, {5, 3}} {
		g, err := New(Config{ID: 1, Inc: inc, Found: true})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Unix(100, 0)
		g.now = t0
		members := []Member{{1, inc}, {2, inc}, {3, inc}}
		g.install(View{ID: 5, Members: members})
		g.Ready()
		g.promised = Ballot{5, 3}
		c := &Change{Next: View{ID: 6, Members: members}, Survivors: []node.ID{1, 2, 3}, Cut: make([]uint64, 3)}
		if err := g.Step(t0, node.Envelope[Msg]{From: b.ID, To: 1, Msg: Msg{Type: MsgCommit, View: 5, Inc: inc, Ballot: b, Change: c}}); err != nil {
			t.Fatal(err)
		}
		if accepted := g.accepted != nil; accepted != (b == g.promised) {
			t.Fatalf("promised %v, a commit of ballot %v: accepted %v", g.promised, b, accepted)
		}
		told := slices.ContainsFunc(g.Ready().Msgs, func(env node.Envelope[Msg]) bool {
			return env.To == b.ID && env.Msg.Type == MsgAck && env.Msg.Reject && env.Msg.Ballot == Ballot{5, 3}
		})
		if told != b.less(Ballot{5, 3}) {
			t.Fatalf("promised 5/3, a commit of ballot %v: its leader told of the promise %v", b, told)
		}
	}
}

// TestCoversNeedsOrderCut: a member covers an accepted change only if it
// holds the change's cut and has ordered up to its order cut (and, with
// ISIS, its final priorities): a leader re-proposes the change only then,
// or a survivor would install the next view missing part of the order.
func TestCoversNeedsOrderCut(t *testing.T) {
	c := &Change{Cut: []uint64{2, 3}, OrderCut: 4}
	for _, tc := range []struct {
		recv    []uint64
		ordered uint64
		want    bool
	}{
		{[]uint64{2, 3}, 4, true},
		{[]uint64{5, 5}, 9, true},
		{[]uint64{2, 3}, 3, false},
		{[]uint64{2, 2}, 4, false},
		{[]uint64{2}, 4, false},
	} {
		if got := covers(tc.recv, tc.ordered, nil, c); got != tc.want {
			t.Fatalf("received %v, ordered %d, change cut %v order cut %d: covers %v, want %v", tc.recv, tc.ordered, c.Cut, c.OrderCut, got, tc.want)
		}
	}
}

// TestRequeueBeyondCut: a member taken out of a view sends again, in its
// next incarnation, exactly its messages beyond the change's cut that
// nobody delivered, and reports none inside the cut as lost: the cut's
// messages reached every survivor (virtual synchrony). The fault runs
// remove a member rarely with messages of its own on both sides of the
// cut.
func TestRequeueBeyondCut(t *testing.T) {
	const inc = 1 << 32
	g, err := New(Config{ID: 1, Inc: inc, Found: true})
	if err != nil {
		t.Fatal(err)
	}
	g.now = time.Unix(100, 0)
	g.install(View{ID: 5, Members: []Member{{1, inc}, {2, inc}, {3, inc}}})
	g.Ready()
	g.seq = 3
	for q := uint64(1); q <= 3; q++ {
		g.store[0][q] = []byte{byte(q)}
	}
	g.recv[0], g.deliv[0] = 3, 2
	g.requeue(&Change{Cut: []uint64{2, 0, 0}})
	if len(g.queue) != 1 || g.queue[0][0] != 3 {
		t.Fatalf("sends again %v, want only message 3 (the cut holds 1 and 2)", g.queue)
	}
	for _, ev := range g.Ready().Events {
		if l, ok := ev.(LostEvent); ok {
			t.Fatalf("reports %v lost, inside the cut", l.Seqs)
		}
	}
}
