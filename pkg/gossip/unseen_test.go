package gossip

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Checks of rules the simulator's integrity and agreement cannot see:
// they hold in every run that still delivers everything everywhere.

func newTestMachine(t *testing.T, id node.ID, n int, mod func(*Config)) *Machine {
	t.Helper()
	var peers []node.ID
	for i := 1; i <= n; i++ {
		peers = append(peers, node.ID(i))
	}
	cfg := Config{ID: id, Peers: peers, Rand: rand.New(rand.NewPCG(uint64(id), 1))}
	if mod != nil {
		mod(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTreeEdgesAgree: in tree mode (tree.go) every edge is known to both
// its ends, a member's parent lists it among its children, and the edges
// form one tree over the group (n−1 of them, all reached from the root),
// for every group size up to 300 and branching factors 1 to 32.
func TestTreeEdgesAgree(t *testing.T) {
	for _, b := range []int{1, 2, 3, 7, 32} {
		for n := 2; n <= 300; n += 1 + n/10 {
			nb := map[node.ID][]node.ID{}
			for id := node.ID(1); id <= node.ID(n); id++ {
				nb[id] = newTestMachine(t, id, n, func(c *Config) { c.Tree, c.Branch = true, b }).neighbours()
			}
			edges := 0
			for x, ys := range nb {
				for _, y := range ys {
					if !slices.Contains(nb[y], x) {
						t.Fatalf("n %d, branch %d: %d lists %d as a neighbour, but %d lists %v", n, b, x, y, y, nb[y])
					}
					edges++
				}
			}
			seen := map[node.ID]bool{1: true}
			for todo := []node.ID{1}; len(todo) > 0; todo = todo[1:] {
				for _, y := range nb[todo[0]] {
					if !seen[y] {
						seen[y] = true
						todo = append(todo, y)
					}
				}
			}
			if edges != 2*(n-1) || len(seen) != n {
				t.Fatalf("n %d, branch %d: %d edge ends and %d members reached, want %d and %d", n, b, edges, len(seen), 2*(n-1), n)
			}
		}
	}
}

// TestBufferCutsMostSpread: when more than Buffer events wait, the cut
// takes those with the fewest rounds left (doc.go, "Bounds and drop
// policy"): what is pushed is the Buffer events with the most rounds left.
func TestBufferCutsMostSpread(t *testing.T) {
	m := newTestMachine(t, 1, 8, func(c *Config) { c.Buffer, c.TTL = 4, 10 })
	var evs []Event
	for s := uint64(1); s <= 12; s++ {
		evs = append(evs, Event{Origin: 2, Seq: s, TTL: uint8(1 + (s*7)%10), Payload: []byte{byte(s)}})
	}
	if err := m.Step(time.Unix(0, 0), node.Envelope[Msg]{From: 2, To: 1, Msg: Msg{Type: MsgPush, Events: evs}}); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1, 0)
	m.Tick(now) // the first round's start
	m.Tick(m.Ready().Wake)
	var ttls []int
	for _, e := range evs {
		ttls = append(ttls, int(e.TTL)-1)
	}
	slices.Sort(ttls)
	want := ttls[len(ttls)-4:]
	pushed := false
	for _, env := range m.Ready().Msgs {
		if env.Msg.Type != MsgPush {
			continue
		}
		pushed = true
		var got []int
		for _, e := range env.Msg.Events {
			got = append(got, int(e.TTL))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("pushed events with rounds left %v, want the 4 with the most: %v", got, want)
		}
	}
	if !pushed {
		t.Fatal("nothing pushed")
	}
}

// TestIdleMeansSent: idle is reported only once every own broadcast has
// gone out: after the round that reports it, nothing of its own waits to
// be pushed, at random or along the tree, even when a burst needs several
// rounds (more than a push frame holds).
func TestIdleMeansSent(t *testing.T) {
	for _, tree := range []bool{false, true} {
		m := newTestMachine(t, 1, 5, func(c *Config) { c.Tree = tree })
		now := time.Unix(0, 0)
		payload := make([]byte, 1000)
		for k := 0; k < 3; k++ {
			var evs []Event
			for range 100 {
				evs = append(evs, Event{Payload: payload})
			}
			if err := m.Step(now, node.Envelope[Msg]{From: 1, To: 1, Msg: Msg{Type: MsgBroadcast, Events: evs}}); err != nil {
				t.Fatal(err)
			}
		}
		m.Tick(now)
		idle := false
		for round := 0; round < 50 && !idle; round++ {
			now = m.Ready().Wake
			m.Tick(now)
			for _, ev := range m.Ready().Events {
				if _, ok := ev.(IdleEvent); ok {
					idle = true
				}
			}
			if idle && (len(m.buf) > 0 || len(m.fwd) > 0) {
				t.Fatalf("tree %v: idle reported with %d events still to push and %d to forward", tree, len(m.buf), len(m.fwd))
			}
		}
		if !idle {
			t.Fatalf("tree %v: never idle in 50 rounds", tree)
		}
	}
}

// TestDigestAfterGap: once a gap is filled, the digest's next for the
// origin is past every event held, so no peer resends what it already has.
func TestDigestAfterGap(t *testing.T) {
	m := newTestMachine(t, 1, 3, nil)
	for _, s := range []uint64{1, 3, 4, 5, 2} {
		if err := m.Step(time.Unix(0, 0), node.Envelope[Msg]{From: 2, To: 1, Msg: Msg{Type: MsgRepair, Events: []Event{{Origin: 2, Seq: s}}}}); err != nil {
			t.Fatal(err)
		}
	}
	d := m.digest()
	if len(d) != 1 || d[0].Origin != 2 || d[0].Next != 6 {
		t.Fatalf("digest %+v after 1, 3, 4, 5 and 2, want origin 2 next 6", d)
	}
}

// TestSimIdleMemberRepairs: anti-entropy (doc.go) runs every round in
// random mode, whether or not the member has anything to push: a member
// that was cut off while an event spread, and whose peers have long
// stopped pushing it (its rounds are spent), learns it by its own pull
// once it is reachable again, with nothing else broadcast. A pull sent
// only alongside a push would leave it without the event for good, and
// the simulator's runs, where later broadcasts keep every buffer busy,
// never show it.
func TestSimIdleMemberRepairs(t *testing.T) {
	ids := []node.ID{1, 2, 3, 4, 5}
	seeds := simtest.AtLeast(10)
	for _, seed := range seeds {
		s := sim.New[Msg](sim.Options{Seed: seed, MinLatency: time.Millisecond, MaxLatency: 5 * time.Millisecond}, Codec{Fam: wire.FamilyMcast},
			func(id node.ID, _ int, r *rand.Rand) node.Machine[Msg] {
				m, err := New(Config{ID: id, Peers: ids, Rand: r})
				if err != nil {
					panic(err)
				}
				return m
			}, ids...)
		got := false
		s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
			if _, ok := ev.(DeliverEvent); ok && id == 5 {
				got = true
			}
			return nil
		}
		s.Isolate(5)
		s.Inject(1, Msg{Type: MsgBroadcast, Events: []Event{{Payload: []byte("x")}}})
		if err := s.RunFor(5 * time.Second); err != nil { // far past the event's rounds
			t.Fatal(err)
		}
		if got {
			t.Fatalf("seed %d: member 5 had the event while it was cut off", seed)
		}
		s.Heal()
		// A pull a round from each member, to one of four peers: member 5's
		// own pulls reach a member with the event within a few rounds.
		if err := s.RunFor(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		if !got {
			t.Fatalf("seed %d: member 5, cut off while the event spread, did not have it 20 rounds after it was reachable again\nreplay: %s", seed, simtest.Replay(t, seed))
		}
	}
	t.Logf("%d seeds passed: the member cut off repaired by its own pulls", len(seeds))
}
