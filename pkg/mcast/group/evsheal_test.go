package group

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// healAtOwnView (extended virtual synchrony): five members in one view;
// member 5 stops hearing the others, and lead later they stop hearing it
// too, so 5 suspects them lead before they suspect it. The network heals
// the moment 5 installs its own view (a component of one): the others,
// still in the old view, send it their statuses of that view. Each
// member multicasts once before the cut and 5 once in its own view.
// Returns the run's outcome: the removals (RemovedEvent: a member that
// rejoined as a new incarnation), the merges (MergeEvent) and CheckViews'
// verdict on the logs, after 3 s.
func healAtOwnView(t *testing.T, lead time.Duration, b bug) (removed, merges []string, err error) {
	t.Helper()
	ids := []node.ID{1, 2, 3, 4, 5}
	s, _ := countingGroup(t, ids, Config{EVS: true, bug: b})
	g := func(id node.ID) *Group { return s.Machine(id).(*Group) }
	logs := map[Member][]Record{}
	cur := map[node.ID]Member{}
	for _, id := range ids {
		cur[id] = Member{id, 1}
	}
	// The founder installed view 1 at boot, before OnEvent was set.
	logs[cur[1]] = []Record{{Kind: VView, View: 1, Members: []Member{cur[1]}}}
	s.OnEvent = func(now time.Time, id node.ID, ev node.Event) error {
		p := cur[id]
		switch e := ev.(type) {
		case SendEvent:
			logs[p] = append(logs[p], Record{Kind: VSend, View: e.View, Seq: e.Seq, Payload: e.Payload})
		case DeliverEvent:
			logs[p] = append(logs[p], Record{Kind: VDeliver, View: e.View, Sender: e.Sender, Seq: e.Seq, Payload: e.Payload})
		case ViewEvent:
			logs[p] = append(logs[p], Record{Kind: VView, View: e.View, Members: e.Members})
		case MergeEvent:
			merges = append(merges, fmt.Sprintf("%v %d: %v", now.Format("05.000"), id, e))
			logs[p] = append(logs[p], Record{Kind: VMerge, View: e.View, Members: e.Members})
			if e.Into != node.None {
				logs[p] = append(logs[p], Record{Kind: VLeft, View: e.View + 1})
				cur[id] = Member{id, e.Inc}
			}
		case RemovedEvent:
			removed = append(removed, fmt.Sprintf("%v %d: %v (%s)", now.Format("05.000"), id, e, e.Cause))
			cur[id] = Member{id, e.Inc}
		}
		return nil
	}
	send := func(id node.ID) {
		s.Inject(id, Msg{Type: MsgSend, Items: []mcast.Item{{Payload: fmt.Appendf(nil, "%d in view %d", id, g(id).view.ID)}}})
	}
	if err := s.RunFor(time.Second); err != nil {
		return nil, nil, err
	}
	if v := g(1).view; len(v.Members) != 5 {
		return nil, nil, fmt.Errorf("not settled: view %d %v", v.ID, v.Members)
	}
	for _, id := range ids {
		send(id)
	}
	if err := s.RunFor(100 * time.Millisecond); err != nil {
		return nil, nil, err
	}
	for _, id := range ids[:4] {
		s.Cut(id, 5)
	}
	if err := s.RunFor(lead); err != nil {
		return nil, nil, err
	}
	s.Isolate(5)
	alone := func() bool { return g(5).inView && slices.Equal(g(5).view.Members, []Member{g(5).me}) }
	for i := 0; i < 5000 && !alone(); i++ {
		if err := s.RunFor(time.Millisecond); err != nil {
			return nil, nil, err
		}
	}
	if !alone() {
		return nil, nil, fmt.Errorf("5 did not install a view of its own: view %d %v", g(5).view.ID, g(5).view.Members)
	}
	if lead > 0 && g(1).view.ID == g(5).view.ID {
		return nil, nil, fmt.Errorf("the others left the old view before 5 installed its own (view %d %v)", g(1).view.ID, g(1).view.Members)
	}
	s.Heal()
	send(5)
	if err := s.RunFor(3 * time.Second); err != nil {
		return nil, nil, err
	}
	final := map[Member]bool{}
	for _, id := range ids {
		final[cur[id]] = true
		if v := g(id).view; !g(id).inView || len(v.Members) != 5 || v.ID != g(1).view.ID || v.Members[0] != g(1).view.Members[0] {
			return removed, merges, fmt.Errorf("member %d is not in the merged view: view %d %v, 1 in view %d %v", id, v.ID, v.Members, g(1).view.ID, g(1).view.Members)
		}
	}
	return removed, merges, CheckViewsEVS(false, true, logs, final)
}

// TestEVSHealGone (extended virtual synchrony): a member cut off goes on
// in a view of its own, and the network heals just as it installs it,
// while the others are still in the old view (they stop hearing it up to
// 100 ms after it stops hearing them). The two sides must merge through
// EVS, each with its history (MergeEvent at all five, nobody removed),
// and CheckViews must pass. The planted bugEVSGone (the member answers
// the others' statuses of the old view with MsgGone, as it did) has the
// four of the other side rejoin as new incarnations instead, whenever
// they were still in the old view at the heal.
func TestEVSHealGone(t *testing.T) {
	leads := []time.Duration{0, 10 * time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond, 100 * time.Millisecond}
	caught := 0
	for _, lead := range leads {
		removed, merges, err := healAtOwnView(t, lead, 0)
		if err != nil {
			t.Errorf("lead %v: %v", lead, err)
		}
		if len(removed) > 0 {
			t.Errorf("lead %v: the sides did not merge through EVS: removed %v", lead, removed)
		}
		if len(merges) != 5 {
			t.Errorf("lead %v: %d merge events, want 5 (one at each member): %v", lead, len(merges), merges)
		}
		removed, _, _ = healAtOwnView(t, lead, bugEVSGone)
		if len(removed) > 0 {
			caught++
			t.Logf("lead %v: planted bugEVSGone: %d removed, e.g. %s", lead, len(removed), removed[0])
		}
	}
	if caught == 0 {
		t.Fatal("planted bugEVSGone: nobody removed at any lead: the test cannot tell")
	}
}

// TestEVSResendLimits: the resend limits hold with extended virtual
// synchrony too (frames name their view's leader, so another component's
// view of the same number no longer takes them: doc.go, "views numbered
// alike"). ISIS: of three members that have each sent 5 messages, all
// delivered and agreed, member 3, shown a status that lacks every agreed
// priority, resends only its own 5 (the planted bugRelayFinals: all 15). Lamport: of three members each sending one
// message while 1 and 3 do not hear each other, member 3, shown twice
// within a Period a status of 1's that lacks them all, resends them the
// first time only (the planted bugResendEach: both times).
func TestEVSResendLimits(t *testing.T) {
	ids := []node.ID{1, 2, 3}
	settled := func(total Total, b bug) *Group {
		t.Helper()
		s, delivered := countingGroup(t, ids, Config{Total: total, EVS: true, StartWith: 3, bug: b})
		if err := s.RunFor(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			items := make([]mcast.Item, 5)
			for k := range items {
				items[k].Payload = fmt.Appendf(nil, "%d-%d", id, k)
			}
			s.Inject(id, Msg{Type: MsgSend, Items: items})
		}
		d0 := *delivered
		if err := s.RunFor(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if *delivered-d0 != 45 {
			t.Fatalf("%v: %d deliveries, want 45", total, *delivered-d0)
		}
		g := s.Machine(3).(*Group)
		if g.flushing || !g.inView {
			t.Fatalf("%v: member 3 is not settled in its view", total)
		}
		return g
	}
	for _, b := range []bug{0, bugResendEach} {
		// Members 1 and 3 stop hearing each other (for less than
		// Suspect): 3 holds what 1 lacks.
		s, _ := countingGroup(t, ids, Config{Total: TotalLamport, EVS: true, StartWith: 3, bug: b})
		if err := s.RunFor(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		s.Cut(1, 3)
		s.Cut(3, 1)
		for _, id := range ids {
			s.Inject(id, Msg{Type: MsgSend, Items: []mcast.Item{{Payload: fmt.Appendf(nil, "%d", id)}}})
		}
		if err := s.RunFor(60 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		g := s.Machine(3).(*Group)
		if g.flushing || !g.inView || len(g.view.Members) != 3 {
			t.Fatal("lamport: member 3 is not settled in its view")
		}
		delete(g.resentAt, 1) // not resent to 1 in the last Period
		k0 := g.stats["retransmitted"]
		g.retransmit(1, make([]uint64, 3), 0, false, false, nil)
		k1 := g.stats["retransmitted"]
		g.retransmit(1, make([]uint64, 3), 0, false, false, nil)
		first, second := k1-k0, g.stats["retransmitted"]-k1
		t.Logf("lamport, bug %d: %d and then %d messages resent", b, first, second)
		if first == 0 || (second != 0) != (b == bugResendEach) {
			t.Errorf("lamport, bug %d: %d and then %d messages resent, want some and then none (bugResendEach: as many again)", b, first, second)
		}
	}
	for _, c := range []struct {
		bug  bug
		want uint64
	}{{0, 5}, {bugRelayFinals, 15}} {
		g := settled(TotalISIS, c.bug)
		k0 := g.stats["retransmitted"]
		g.order.(*isisOrder).retransmit(1, make([]uint64, 3), false)
		if got := g.stats["retransmitted"] - k0; got != c.want {
			t.Errorf("isis, bug %d: %d agreed priorities resent, want %d", c.bug, got, c.want)
		}
	}
}
