package ticket

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestVouchByPlace: support counts a vouch only from the place L names,
// (ID, ticket), never from the same ID at another ticket (doc.go, "Places
// are (ID, ticket)"). The schedule: process 1 (ticket 4 of 8) has L = {2
// at 5, 3 at 6, 4 at 7}; 4 has crashed, 2 and 3 vouch at t0. Then 2 loses
// its place (say inside an exclusion's E_pq, where §4's Corollary 4.1
// needs it silent once it stops acting) and joins again under its ID at
// ticket 0, from where 1 is among its closest successors; at t0+2R it and
// 3 vouch for 1. Only one of L's places has vouched since t0, so 1's
// support must still end at t0+W: the new incarnation's ALIVE, naming
// ticket 0, vouches for nothing 2 at 5 was in L for, and is answered
// "uncounted". An ALIVE from 2 at ticket 5 itself does extend it (the
// check is not vacuous). The planted bugVouchByID, which keys vouches by
// ID alone as support did before, keeps 1 acting until t0+2R+W and is
// caught.
func TestVouchByPlace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	run := func(b bug, place uint32) (*Machine, time.Time, bool) {
		m := heldMachine(t, b, t0) // every vouch ends before t0+W
		vouch := func(now time.Time, from node.ID, place uint32) {
			if err := m.Step(now, node.Envelope[Msg]{From: from, To: 1, Msg: Msg{Type: MsgAlive, Ticket: 4, N: 8, Place: place}}); err != nil {
				t.Fatal(err)
			}
		}
		vouch(t0, 2, 5)
		vouch(t0, 3, 6)
		r := m.cfg.Round
		for now := t0; now.Before(t0.Add(2 * r)); now = now.Add(r) {
			m.Tick(now) // rounds on time: no vouch is dated back (held.go)
			m.Ready()
		}
		t2 := t0.Add(2 * r)
		m.Tick(t2)
		m.Ready()
		vouch(t2, 3, 6)
		vouch(t2, 2, place)
		uncounted := false
		for _, e := range m.Ready().Msgs {
			if e.To == 2 && e.Msg.Type == MsgIntro && e.Msg.Ticket == NoTicket && e.Msg.Attempt == introUncounted {
				uncounted = true
			}
		}
		return m, t2, uncounted
	}

	m, _, uncounted := run(0, 0)
	w := m.window()
	if got := m.SupportedUntil(); !got.Equal(t0.Add(w)) {
		t.Errorf("an ALIVE from 2's new place (ticket 0) moved 1's support to +%v, want +%v: it vouched for 2's old place",
			got.Sub(t0), w)
	}
	if m.MayAct(t0.Add(w)) {
		t.Errorf("1 may act at +%v, when its support from L's places ran out", w)
	}
	if !uncounted {
		t.Error("an ALIVE from 2 at ticket 0, a place 1's full L does not name, was not answered \"uncounted\"")
	}

	m, t2, uncounted := run(0, 5)
	if got := m.SupportedUntil(); !got.Equal(t2.Add(w)) {
		t.Errorf("an ALIVE from 2 at ticket 5, the place L names: supported until +%v, want +%v", got.Sub(t0), t2.Add(w).Sub(t0))
	}
	if uncounted {
		t.Error("an ALIVE from the place L names was answered \"uncounted\"")
	}

	m, t2, _ = run(bugVouchByID, 0)
	if got := m.SupportedUntil(); !got.Equal(t2.Add(w)) || !m.MayAct(t0.Add(w)) {
		t.Errorf("planted bugVouchByID not caught: supported until +%v, want +%v (the check above would pass it)",
			got.Sub(t0), t2.Add(w).Sub(t0))
	}
}

// TestAliveNamesItsPlace: every ALIVE a process sends names its own
// ticket, to its closest successors and to former ones alike.
func TestAliveNamesItsPlace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	m, err := New(Config{ID: 1, Tickets: 8, Rand: rand.New(rand.NewPCG(1, 2)), FaultTolerant: true})
	if err != nil {
		t.Fatal(err)
	}
	m.st, m.n, m.ticket = stCoordinator, 8, 4
	m.succ, m.succTicket, m.pred = 5, 3, 2
	m.preds, m.predsFull = []Owner{{Ticket: 5, ID: 2}, {Ticket: 6, ID: 3}, {Ticket: 7, ID: 4}}, true
	m.learn(t0, Owner{Ticket: 2, ID: 6})
	m.learn(t0, Owner{Ticket: 1, ID: 7})
	m.former = map[node.ID]known{8: {ticket: 0, at: t0.Add(time.Minute)}}
	m.roundAt, m.lastAck, m.lastNews = t0, t0, t0
	for _, o := range m.preds {
		m.alive[o] = t0
	}
	m.Tick(t0)
	n := 0
	for _, e := range m.Ready().Msgs {
		if e.Msg.Type != MsgAlive {
			continue
		}
		n++
		if e.Msg.Place != 4 {
			t.Errorf("ALIVE to %d names place %d, want 4", e.To, e.Msg.Place)
		}
		typ, p, err := Codec{}.Marshal(e.Msg)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := (Codec{}).Unmarshal(typ, p); err != nil || got.Place != 4 {
			t.Errorf("ALIVE to %d decoded with place %d, %v", e.To, got.Place, err)
		}
	}
	if n != 4 {
		t.Errorf("%d ALIVEs, want 4 (three closest successors and one former)", n)
	}
}
