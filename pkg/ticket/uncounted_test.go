package ticket

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestUncountedAlive: a process with a full L answers an ALIVE from a
// process outside it ("you are not in my L"), and not one from inside;
// the sender stops its ALIVEs to a former successor on that answer, but
// not to one of its 2k+1 closest (whose L may not have caught up with a
// join yet).
func TestUncountedAlive(t *testing.T) {
	m, err := New(Config{ID: 1, Rand: rand.New(rand.NewPCG(1, 2)), FaultTolerant: true, Tickets: 10})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(100, 0)
	m.st, m.ticket, m.n = stCoordinator, 3, 10
	m.preds, m.predsFull = []Owner{{Ticket: 4, ID: 2}, {Ticket: 5, ID: 3}, {Ticket: 6, ID: 4}}, true
	answers := func(from node.ID) bool {
		m.out = nil
		m.onAlive(now, from, Msg{Type: MsgAlive, Ticket: 3, Place: uint32(from) + 2})
		for _, e := range m.out {
			if e.To == from && e.Msg.Type == MsgIntro && e.Msg.Ticket == NoTicket && e.Msg.Attempt == introUncounted {
				return true
			}
		}
		return false
	}
	if answers(3) {
		t.Error("answered an ALIVE from its own L")
	}
	if !answers(9) {
		t.Error("no answer to an ALIVE from outside its full L")
	}
	m.predsFull = false
	if answers(9) {
		t.Error("answered with an L not yet full")
	}

	m.succs = []Owner{{Ticket: 2, ID: 5}, {Ticket: 1, ID: 6}, {Ticket: 0, ID: 7}}
	m.former = map[node.ID]known{8: {ticket: 9, at: now.Add(time.Second)}, 6: {ticket: 1, at: now.Add(time.Second)}}
	m.onIntro(now, 8, Msg{Type: MsgIntro, Ticket: NoTicket, Attempt: introUncounted})
	m.onIntro(now, 6, Msg{Type: MsgIntro, Ticket: NoTicket, Attempt: introUncounted})
	if _, ok := m.former[8]; ok {
		t.Error("kept vouching for a former successor that does not count on it")
	}
	if _, ok := m.former[6]; !ok || len(m.succs) != 3 {
		t.Errorf("dropped one of its closest successors: former %v succs %v", m.former, m.succs)
	}
}

// TestIntroFormerOwnPlace: an INTRO brings our ALIVEs back only when it
// names this place. One meant for an earlier incarnation of this ID (it
// lost its support inside an E_pq and joined again on another ticket)
// must not have the new process vouch for the old one's successor, which
// counts vouches by ID (§4, Corollary 4.1: r_j sends nothing once it
// stops acting; ticketsim's TestTheorem41IndependentCrashes). The
// planted bugIntroAnyPlace is caught here.
func TestIntroFormerOwnPlace(t *testing.T) {
	vouches := func(b bug, place uint32) bool {
		m, err := New(Config{ID: 12, Rand: rand.New(rand.NewPCG(1, 2)), FaultTolerant: true, Tickets: 50})
		if err != nil {
			t.Fatal(err)
		}
		m.cfg.bug = b
		m.st, m.ticket, m.n = stCoordinator, 18, 50
		// 2 at ticket 3 counted 12 at ticket 5 in its L.
		m.onIntro(time.Unix(100, 0), 2, Msg{Type: MsgIntro, Ticket: 3, SuccTicket: place})
		_, ok := m.former[2]
		return ok
	}
	if !vouches(0, 18) {
		t.Error("an INTRO naming this place brought no ALIVEs")
	}
	if vouches(0, 5) {
		t.Error("an INTRO naming this ID's earlier place (ticket 5) brought ALIVEs from ticket 18")
	}
	if !vouches(bugIntroAnyPlace, 5) {
		t.Error("planted bugIntroAnyPlace not caught: the check above would pass it")
	}
}
