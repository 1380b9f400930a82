package consensus

import (
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Margins the random runs rarely reach: a barrier that times out one
// peer short, and a process that heard exactly half of the processes in
// round 1.

func events(m *Machine) []node.Event { return m.Ready().Events }

// TestBarrierTimeoutNeedsNMinusF: at the barrier's timeout a process
// starts without the rest only with n−f processes and a majority, itself
// included (barrier.go); n = 5, f = 1 needs 3 others, so with 2 it gives
// up undecided.
func TestBarrierTimeoutNeedsNMinusF(t *testing.T) {
	for _, heard := range []int{2, 3} {
		m, err := New(Config{ID: 1, Peers: []node.ID{1, 2, 3, 4, 5}, F: 1, Value: "1", Wait: time.Second, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Unix(100, 0)
		m.Tick(t0)
		for p := 2; p < 2+heard; p++ {
			if err := m.Step(t0.Add(10*time.Millisecond), node.Envelope[Msg]{From: node.ID(p), To: 1, Msg: Msg{Hello: true}}); err != nil {
				t.Fatal(err)
			}
		}
		m.Tick(t0.Add(2 * time.Second))
		undecided := false
		for _, ev := range events(m) {
			_, undecided = ev.(UndecidedEvent)
		}
		if started := m.started; started == undecided || started != (heard >= 3) {
			t.Fatalf("heard from %d of 4 peers at the timeout (n = 5, f = 1 needs 3): started %v, undecided %v", heard, started, undecided)
		}
	}
}

// TestHalfHeardInRoundOneUndecided: FloodSet with n = 4, f = 2; process 1
// hears only 2 in every round (2 misses, within f), so with itself it
// heard half the processes in round 1, not a majority: 3 and 4 may be
// late rather than crashed and decide apart, so it must not decide
// (consensus.go, finish). Hearing 2 and 3 is a majority, and it decides.
func TestHalfHeardInRoundOneUndecided(t *testing.T) {
	for _, from := range [][]node.ID{{2}, {2, 3}} {
		t0 := time.Unix(100, 0)
		m, err := New(Config{ID: 1, Peers: []node.ID{1, 2, 3, 4}, F: 2, Value: "5", Start: t0, Round: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var evs []node.Event
		m.Tick(t0)
		for r := 1; r <= 3; r++ {
			at := t0.Add(time.Duration(r-1)*50*time.Millisecond + 10*time.Millisecond)
			for _, p := range from {
				if err := m.Step(at, node.Envelope[Msg]{From: p, To: 1, Msg: Msg{Round: uint32(r), Entries: []Entry{{Value: "7"}}}}); err != nil {
					t.Fatal(err)
				}
			}
			m.Tick(t0.Add(time.Duration(r) * 50 * time.Millisecond))
			evs = append(evs, events(m)...)
		}
		decided := false
		for _, ev := range evs {
			if _, ok := ev.(DecideEvent); ok {
				decided = true
			}
		}
		if decided != (len(from) == 2) {
			t.Fatalf("heard %v in round 1 of n = 4: decided %v, events %v", from, decided, evs)
		}
	}
}

// TestLateCopyNotThisRound: FloodSet with n = 4, f = 1 (two rounds of
// 50 ms). Process 2 crashes in round 1 after sending its value "0" to 3
// and 4 only. In round 2 process 1 (which heard 3 and 4 in round 1) gets
// copies of 3's and 4's round-1 messages (the network duplicated and
// delayed them), then their round-2 messages, which carry "0". A message
// of an earlier round is late and only counted (consensus.go, Step):
// taken for round 2 it would complete the round before 3 and 4 are
// heard, and process 1 would decide without "0", which 3 and 4 decide.
func TestLateCopyNotThisRound(t *testing.T) {
	t0 := time.Unix(100, 0)
	m, err := New(Config{ID: 1, Peers: []node.ID{1, 2, 3, 4}, F: 1, Value: "5", Start: t0, Round: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	step := func(d time.Duration, from node.ID, round int, vals ...string) {
		var es []Entry
		for _, v := range vals {
			es = append(es, Entry{Value: v})
		}
		if err := m.Step(t0.Add(d), node.Envelope[Msg]{From: from, To: 1, Msg: Msg{Round: uint32(round), Entries: es}}); err != nil {
			t.Fatal(err)
		}
	}
	m.Tick(t0)
	step(10*time.Millisecond, 3, 1, "7")
	step(10*time.Millisecond, 4, 1, "7")
	m.Tick(t0.Add(50 * time.Millisecond))
	step(56*time.Millisecond, 3, 1, "7") // late copies of round 1
	step(56*time.Millisecond, 4, 1, "7")
	step(60*time.Millisecond, 3, 2, "0", "5", "7")
	step(60*time.Millisecond, 4, 2, "0", "5", "7")
	m.Tick(t0.Add(100 * time.Millisecond))
	evs := events(m)
	for _, ev := range evs {
		if d, ok := ev.(DecideEvent); ok {
			if d.Value != "0" {
				t.Fatalf("process 1 decided %q, want \"0\" as 3 and 4 do: a copy of a round-1 message counted for round 2 (events %v)", d.Value, evs)
			}
			return
		}
	}
	t.Fatalf("process 1 did not decide: %v", evs)
}
