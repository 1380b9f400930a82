package ticket

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// probeOverJoin drives one member (ID 2 of 1, 2 and 3; 100 ms rounds)
// that asks for a ticket and is turned away for good: every CJOIN is
// rejected 20 ms after it goes out. It reports whether the member sent
// its refound probe (due after refoundAfter rounds of this) while a
// CJOIN of its was out and unanswered, when a grant might have been on
// the way. seed draws the joiner's choices.
func probeOverJoin(t *testing.T, seed uint64, b bug) bool {
	t.Helper()
	now := time.Unix(1000, 0)
	cfg := Config{ID: 2, FaultTolerant: true, Round: 100 * time.Millisecond, Rand: rand.New(rand.NewPCG(seed, 2)), bug: b}
	h, err := NewMember(cfg, func() []node.ID { return []node.ID{1, 3} }, true)
	if err != nil {
		t.Fatal(err)
	}
	self := func(m Msg) { _ = h.Step(now, node.Envelope[Msg]{From: 2, To: 2, Msg: m}) }
	self(Msg{Type: MsgGroup, Group: []node.ID{1, 3}})
	self(Msg{Type: MsgJoin})
	type answer struct {
		at time.Time
		e  node.Envelope[Msg]
	}
	var due []answer
	start := now
	for now.Sub(start) < (refoundAfter+15)*cfg.Round {
		for _, e := range h.Ready().Msgs {
			switch e.Msg.Type {
			case MsgCJoin:
				due = append(due, answer{now.Add(20 * time.Millisecond), node.Envelope[Msg]{From: e.To, To: 2,
					Msg: Msg{Type: MsgReject, Attempt: e.Msg.Attempt, N: 4, Succ: 4 - e.To}}})
			case MsgProbe:
				return len(due) > 0 // a CJOIN unanswered
			}
		}
		now = now.Add(time.Millisecond)
		for len(due) > 0 && !now.Before(due[0].at) {
			_ = h.Step(now, due[0].e)
			due = due[1:]
		}
		h.Tick(now)
	}
	t.Fatalf("seed %d: no probe in %v", seed, (refoundAfter+15)*cfg.Round)
	return false
}

// TestProbeWaitsForJoinAnswer: a member that has asked for a ticket for
// refoundAfter rounds does not send its refound probe while a CJOIN of
// its is out and may yet be granted (Machine.JoinInFlight): the probe's
// freeze would drop the join the grant makes, and the coordinator would
// hold the place for a joiner that has moved on until it excluded it,
// turning the others away meanwhile (found at seed 647 of
// TestSimCutAsTicketd's sweep, before a freed ticket's coordinator told
// its joiners, hint.go, and made that seed's timing rare). Over 50
// seeds of the joiner's choices; the planted bugProbeOverJoin probes all
// the same, and is caught in some of them.
func TestProbeWaitsForJoinAnswer(t *testing.T) {
	caught := 0
	for seed := uint64(1); seed <= 50; seed++ {
		if probeOverJoin(t, seed, 0) {
			t.Fatalf("seed %d: a probe went out over an unanswered CJOIN", seed)
		}
		if probeOverJoin(t, seed, bugProbeOverJoin) {
			caught++
		}
	}
	t.Logf("planted bugProbeOverJoin: a probe over an unanswered CJOIN in %d of 50 seeds", caught)
	if caught == 0 {
		t.Fatal("planted bugProbeOverJoin was not caught")
	}
}
