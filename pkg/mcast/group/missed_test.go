package group

import (
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// missedRun runs five members that each send a message every 2 ms; member
// 5 is cut off for three Suspect times from the 300th millisecond, so the
// others go on without it, and then comes back. It returns, for member
// 5's last view before it was removed, the messages the members that
// stayed delivered in that view and member 5 did not (its holes), and
// what member 5 reported missed (MissedEvent), both as sender/seq sets;
// unknown counts reports without a cut.
func missedRun(t *testing.T, seed uint64, cfg Config) (holes, reported map[Stamp]bool, unknown int) {
	t.Helper()
	const paused = node.ID(5)
	ids := []node.ID{1, 2, 3, 4, 5}
	s := sim.New[Msg](sim.Options{Seed: seed, MinLatency: time.Millisecond, MaxLatency: 4 * time.Millisecond}, Codec{},
		func(id node.ID, _ int, _ *rand.Rand) node.Machine[Msg] {
			c := cfg
			c.ID, c.Inc, c.Found, c.Contacts, c.StartWith = id, 1, id == 1, ids, len(ids)
			m, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}, ids...)
	got := map[node.ID]map[uint64]map[Stamp]bool{} // member → view → delivered
	var removedFrom uint64
	reported = map[Stamp]bool{}
	s.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
		switch e := ev.(type) {
		case DeliverEvent:
			if got[id] == nil {
				got[id] = map[uint64]map[Stamp]bool{}
			}
			if got[id][e.View] == nil {
				got[id][e.View] = map[Stamp]bool{}
			}
			got[id][e.View][Stamp{e.Sender, e.Seq}] = true
		case RemovedEvent:
			if id == paused && removedFrom == 0 {
				removedFrom = e.View
			}
		case MissedEvent:
			if id != paused {
				return fmt.Errorf("seed %d: member %d, never cut off, reports %v", seed, id, e)
			}
			if e.Unknown {
				unknown++
			}
			for _, q := range e.Seqs {
				reported[Stamp{e.Sender, q}] = true
			}
		}
		return nil
	}
	k := 0
	for at := time.Duration(0); at < 1200*time.Millisecond; at += 2 * time.Millisecond {
		if at == 300*time.Millisecond {
			s.Isolate(paused)
			s.At(s.Now().Add(3*Config{}.SuspectTime()), s.Heal)
		}
		k++
		for _, id := range ids {
			s.Inject(id, Msg{Type: MsgSend, Items: []mcast.Item{{Payload: []byte(fmt.Sprintf("%d-%d", id, k))}}})
		}
		if err := s.RunFor(2 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if removedFrom == 0 {
		t.Fatalf("%v seed %d: member 5 was never removed", cfg.Total, seed)
	}
	holes = map[Stamp]bool{}
	for _, id := range ids[:4] {
		for st := range got[id][removedFrom] {
			if !got[paused][removedFrom][st] {
				holes[st] = true
			}
		}
	}
	return holes, reported, unknown
}

// TestRemovedReportsMissed: a member the group went on without reports
// exactly the messages of its last view that the members that stayed
// delivered and it did not (MissedEvent, from the cut of the change that
// removed it), in every order; the planted bug that reports nothing
// leaves the holes unreported.
func TestRemovedReportsMissed(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator runs: run without -race")
	}
	for _, total := range []Total{TotalNone, TotalSequencer, TotalLamport, TotalISIS, TotalTotem} {
		withHoles := 0
		for seed := uint64(1); seed <= 3; seed++ {
			holes, reported, unknown := missedRun(t, seed, Config{Total: total})
			if unknown > 0 {
				t.Errorf("%v seed %d: %d reports without the view's cut, though the others answer with it", total, seed, unknown)
			}
			if !mapsEqual(holes, reported) {
				t.Errorf("%v seed %d: missed %d messages (%v), reported %d (%v)", total, seed, len(holes), sortedStamps(holes), len(reported), sortedStamps(reported))
			}
			if len(holes) > 0 {
				withHoles++
			}
		}
		t.Logf("%v: holes in %d of 3 runs, each reported", total, withHoles)
		if withHoles == 0 {
			t.Errorf("%v: the cut-off member never missed a message: the test shows nothing", total)
		}
	}
	holes, reported, _ := missedRun(t, 1, Config{Total: TotalSequencer, bug: bugNoMissed})
	if len(holes) == 0 || len(reported) > 0 {
		t.Errorf("planted bug (no MissedEvent): %d holes, %d reported", len(holes), len(reported))
	}
}

func mapsEqual(a, b map[Stamp]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func sortedStamps(m map[Stamp]bool) []Stamp {
	var out []Stamp
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Stamp) int {
		if a.Sender != b.Sender {
			return int(a.Sender) - int(b.Sender)
		}
		return int(a.Seq) - int(b.Seq)
	})
	if len(out) > 8 {
		out = out[:8]
	}
	return out
}
