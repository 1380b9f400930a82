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
		m.onAlive(now, from, Msg{Type: MsgAlive, Ticket: 3})
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
