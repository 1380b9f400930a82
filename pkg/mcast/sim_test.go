package mcast

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

var dbg bool

type scenario struct {
	seed  uint64
	order Order
	bug   bug
}

// run: members multicast at random over 3 s of loss, duplication,
// reordering, crashes (some right after a send, so that only some members
// got it), pauses and partitions; then everything heals (the crashed stay
// down) and after 5 s the logs must pass Check.
func (sc scenario) run() (sends int, err error) {
	r := rand.New(rand.NewPCG(sc.seed, 31))
	n := 3 + r.IntN(4)
	ids := make([]node.ID, n)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	opts := sim.Options{Seed: sc.seed, MinLatency: time.Millisecond, MaxLatency: time.Duration(2+r.IntN(20)) * time.Millisecond,
		Drop: r.Float64() * 0.3, Dup: r.Float64() * 0.1}
	opts.HeldFirst = heldFirst(sc.seed)
	s := sim.New[Msg](opts, Codec{}, func(id node.ID, inc int, _ *rand.Rand) node.Machine[Msg] {
		if inc > 1 {
			panic("mcast members do not restart in this model")
		}
		m, err := New(Config{ID: id, Peers: ids, Order: sc.order, bug: sc.bug})
		if err != nil {
			panic(err)
		}
		return m
	}, ids...)
	logs := map[node.ID][]Record{}
	done := map[node.ID]bool{}
	for _, id := range ids {
		logs[id] = nil
	}
	s.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
		switch e := ev.(type) {
		case SendEvent:
			logs[id] = append(logs[id], Record{Send: true, Seq: e.Seq, Payload: e.Payload})
		case DeliverEvent:
			if done[id] {
				return fmt.Errorf("member %d delivered %d/%d after it was done", id, e.Sender, e.Seq)
			}
			logs[id] = append(logs[id], Record{Sender: e.Sender, Seq: e.Seq, Payload: e.Payload})
		case DoneEvent:
			done[id] = true
		}
		return nil
	}
	crashed := map[node.ID]bool{}
	fail := func(err error) (int, error) {
		return sends, fmt.Errorf("%v seed %d (%d members, drop %.2f, dup %.2f): %v", sc.order, sc.seed, n, opts.Drop, opts.Dup, err)
	}
	for step := 0; step < 30; step++ {
		id := ids[r.IntN(n)]
		switch r.IntN(10) {
		case 0:
			if len(crashed) < n-1 && !crashed[id] {
				// Crash right after a send: its copies are in flight, and
				// the loss decides who gets one.
				sends++
				s.Inject(id, Msg{Type: MsgSend, Items: []Item{{Payload: []byte(fmt.Sprintf("last words of %d", id))}}})
				s.Crash(id)
				crashed[id] = true
			}
		case 1:
			s.Pause(id)
		case 2:
			s.Resume(id)
		case 3:
			s.RandomPartition(r)
		case 4:
			s.Heal()
		default:
			for k := r.IntN(5); k >= 0; k-- {
				sender := ids[r.IntN(n)]
				if !crashed[sender] && !s.Paused(sender) {
					sends++
					s.Inject(sender, Msg{Type: MsgSend, Items: []Item{{Payload: []byte(fmt.Sprintf("m%d-%d", step, k))}}})
				}
			}
		}
		if err := s.RunFor(time.Duration(20+r.IntN(180)) * time.Millisecond); err != nil {
			return fail(err)
		}
	}
	s.Heal()
	s.SetFaults(0, 0)
	for _, id := range ids {
		s.Resume(id)
	}
	// Every input ends: each member that did not crash must be done (and
	// deliver nothing after that) within 5 s.
	for _, id := range ids {
		s.Inject(id, Msg{Type: MsgEnd})
	}
	if err := s.RunFor(5 * time.Second); err != nil {
		return fail(err)
	}
	if dbg {
		for _, id := range ids {
			if m, ok := s.Machine(id).(*Machine); ok && m != nil {
				fmt.Println(id, "crashed", crashed[id], "recv", m.recv, "deliv", m.deliv, "high", m.high, "final", m.final, "pf", m.peerFinal, "held", m.held)
			}
		}
	}
	for _, id := range ids {
		if !crashed[id] && !done[id] {
			return fail(fmt.Errorf("member %d is not done 5 s after every input ended", id))
		}
	}
	if s.Stats.Rejected != 0 {
		return fail(fmt.Errorf("%d messages rejected", s.Stats.Rejected))
	}
	if err := Check(sc.order, logs, crashed); err != nil {
		return fail(err)
	}
	return sends, nil
}

func TestSimOrders(t *testing.T) {
	for _, order := range []Order{Unordered, FIFO, Causal} {
		t.Run(order.String(), func(t *testing.T) {
			t.Parallel()
			total := 0
			n := simtest.EverySeed(t, func(seed uint64) error {
				k, err := scenario{seed: seed, order: order}.run()
				total += k
				return err
			})
			t.Logf("%v: %d seeds passed, %d messages multicast", order, n, total)
		})
	}
}

// TestSimCatchesPlantedBug: delivering from the hold-back queue one step
// early (FIFO), skipping the vector-clock condition (causal), and not
// relaying a crashed sender's messages are each caught (the last as
// members that can never agree they are done: some lack what others have).
func TestSimCatchesPlantedBug(t *testing.T) {
	for _, c := range []struct {
		name  string
		order Order
		bug   bug
		want  string
	}{
		{"early delivery", FIFO, bugEarly, "fifo"},
		{"no vector merge", Causal, bugNoMerge, "causal"},
		{"no relay", FIFO, bugNoRelay, "not done"}, // members that lack a crashed sender's message never agree they are done
	} {
		simtest.Catch(t, c.name, 200, func(seed uint64) error {
			_, err := scenario{seed: seed, order: c.order, bug: c.bug}.run()
			return err
		}, c.want)
	}
}
