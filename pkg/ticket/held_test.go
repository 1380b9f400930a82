package ticket

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// heldMachine is a coordinator (ID 1, ticket 4 of 8) with three
// predecessors (IDs 2, 3, 4) in its L, k = 1, 100 ms rounds and a
// support window of 12 rounds, whose round is due at t0.
func heldMachine(t *testing.T, b bug, t0 time.Time) *Machine {
	t.Helper()
	m, err := New(Config{ID: 1, Tickets: 8, Rand: rand.New(rand.NewPCG(1, 2)), FaultTolerant: true, Window: 12})
	if err != nil {
		t.Fatal(err)
	}
	m.cfg.bug = b
	m.st, m.n, m.ticket = stCoordinator, 8, 4
	m.succ, m.succTicket, m.pred = 5, 3, 2
	m.preds = []Owner{{Ticket: 5, ID: 2}, {Ticket: 6, ID: 3}, {Ticket: 7, ID: 4}}
	m.predsFull = true
	m.roundAt, m.lastAck, m.lastNews = t0, t0, t0
	for _, o := range m.preds {
		m.alive[o] = t0.Add(-time.Second)
	}
	return m
}

// alive is an ALIVE from from at its place in heldMachine's L (ticket
// from+3).
func alive(from node.ID) node.Envelope[Msg] {
	return node.Envelope[Msg]{From: from, To: 1, Msg: Msg{Type: MsgAlive, Ticket: 4, N: 8, Place: uint32(from) + 3}}
}

// TestHeldVouchDatedBeforeStall: ALIVEs a process finds waiting after a
// stall count from the last instant it ran on time, not from when it
// reads them (held.go). Two voters' ALIVEs at t0; the process stalls
// (its round at t0 is overdue) and wakes at t0+1 s, its support still
// running, to the same two voters' ALIVEs, which they may have sent
// before they banned its ticket. Dated at their reading they would
// carry its support to t0+2.2 s, past an excluder's wait counted from
// the ban (Theorem 4.1, §4); dated at t0 it ends at t0+1.2 s, as if it
// had read them on time. The planted bugHeldFresh dates them at their
// reading and shows the old rule's longer support. Once the stall is
// over (its round ran, δ passed) an ALIVE counts from its reading again.
func TestHeldVouchDatedBeforeStall(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	window := 1200 * time.Millisecond
	for _, c := range []struct {
		name string
		bug  bug
		want time.Time
	}{
		{"rule", 0, t0.Add(window)},
		{"bugHeldFresh", bugHeldFresh, t0.Add(time.Second + window)},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := heldMachine(t, c.bug, t0)
			for _, id := range []node.ID{2, 3} {
				if err := m.Step(t0, alive(id)); err != nil {
					t.Fatal(err)
				}
			}
			if got := m.SupportedUntil(); !got.Equal(t0.Add(window)) {
				t.Fatalf("supported until +%v after ALIVEs on time, want +%v", got.Sub(t0), window)
			}
			t1 := t0.Add(time.Second) // no Tick since t0: the round due at t0 is overdue
			for _, id := range []node.ID{2, 3} {
				if err := m.Step(t1, alive(id)); err != nil {
					t.Fatal(err)
				}
			}
			if !m.MayAct(t1) {
				t.Fatalf("lost its support at +1 s, want it until +%v", window)
			}
			if got := m.SupportedUntil(); !got.Equal(c.want) {
				t.Fatalf("held ALIVEs: supported until +%v, want +%v", got.Sub(t0), c.want.Sub(t0))
			}
		})
	}
	// After the stall: the round runs at t1, and ALIVEs read δ later
	// count from their reading.
	m := heldMachine(t, 0, t0)
	t1 := t0.Add(time.Second)
	m.Step(t0, alive(2))
	m.Step(t0, alive(3))
	m.Step(t1, alive(2))
	m.Tick(t1)
	m.Ready()
	t2 := t1.Add(m.cfg.Delta)
	for _, id := range []node.ID{2, 3} {
		if err := m.Step(t2, alive(id)); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.SupportedUntil(); !got.Equal(t2.Add(window)) {
		t.Fatalf("ALIVEs read δ after the stall ended: supported until +%v, want +%v", got.Sub(t0), t2.Add(window).Sub(t0))
	}
}

// TestSimPauseMidExclusionHeldFresh replays the two seeds of
// TestSimPauseMidExclusion in which a vouch read after a stall was dated
// at its reading: the excluded process, back from a pause of over a
// second with its (stretched) support still running, read ALIVEs its
// voters had sent before their ban and acted when the excluder handed
// its ticket out. With the planted bugHeldFresh Theorem 4.1 catches it in
// both; with the rule both pass.
func TestSimPauseMidExclusionHeldFresh(t *testing.T) {
	for _, seed := range []uint64{574, 718} {
		if _, err := pauseRun(seed, bugHeldFresh); err == nil || !strings.Contains(err.Error(), "in the ranges of both") {
			t.Errorf("seed %d with bugHeldFresh: %v, want two processes acting on one ticket", seed, err)
		}
		if _, err := pauseRun(seed, 0); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
	}
}
