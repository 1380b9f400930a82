package ticket

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// churn is one §3 run: a founder and joiners that join and leave at random
// over lossy, duplicating, reordering links, with the checkers on.
type churn struct {
	seed  uint64
	procs int
	n     int
	bug   bug
}

func (c churn) run() (taken int, err error) {
	r := rand.New(rand.NewPCG(c.seed, 11))
	ids := make([]node.ID, c.procs)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	machines := map[node.ID]*Machine{}
	opts := sim.Options{Seed: c.seed, MinLatency: time.Millisecond, MaxLatency: time.Duration(2+r.IntN(20)) * time.Millisecond,
		Drop: r.Float64() * 0.2, Dup: r.Float64() * 0.1}
	s := sim.New[Msg](opts, Codec{}, func(id node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
		cfg := Config{ID: id, Rand: rng, Contacts: []node.ID{1}, bug: c.bug}
		if id == 1 {
			cfg.Tickets, cfg.Contacts = c.n, nil
		}
		m, err := New(cfg)
		if err != nil {
			panic(err)
		}
		machines[id] = m
		return m
	}, ids...)
	epochs := NewEpochChecker()
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if te, ok := ev.(TakenEvent); ok {
			return epochs.Observe(id, te)
		}
		return nil
	}
	s.Invariant = func() error { return Disjoint(machines) }
	fail := func(err error) (int, error) {
		return epochs.Taken, fmt.Errorf("seed %d (%d processes, %d tickets, drop %.2f, dup %.2f): %v",
			c.seed, c.procs, c.n, opts.Drop, opts.Dup, err)
	}
	s.Inject(1, Msg{Type: MsgJoin})
	// Churn: every process but the founder joins once and leaves once, at
	// random times in the first 3 s; the founder leaves too, sometimes.
	for _, id := range ids[1:] {
		join := time.Duration(r.Int64N(int64(2 * time.Second)))
		s.At(s.Now().Add(join), func() { s.Inject(id, Msg{Type: MsgJoin}) })
		if r.IntN(3) > 0 {
			leave := join + time.Duration(r.Int64N(int64(time.Second)))
			s.At(s.Now().Add(leave), func() { s.Inject(id, Msg{Type: MsgLeave}) })
		}
	}
	if r.IntN(4) == 0 {
		s.At(s.Now().Add(time.Duration(r.Int64N(int64(3*time.Second)))), func() { s.Inject(1, Msg{Type: MsgLeave}) })
	}
	if err := s.RunFor(4 * time.Second); err != nil {
		return fail(err)
	}
	// Faults stop; everything in progress settles.
	s.SetFaults(0, 0)
	if err := s.RunFor(2 * time.Second); err != nil {
		return fail(err)
	}
	if err := Covered(machines, uint32(c.n)); err != nil {
		return fail(fmt.Errorf("after settling: %v", err))
	}
	if s.Stats.Rejected != 0 {
		return fail(fmt.Errorf("%d messages rejected", s.Stats.Rejected))
	}
	return epochs.Taken, nil
}

// TestSimChurn: §3 under churn (every process joins and most leave, at
// random, concurrently) over links that lose, duplicate and reorder: no
// ticket is ever in two ranges (Theorem 3.1), every ticket is owned or
// coordinated once things settle (Lemma 3.1), and epochs grow per ticket.
func TestSimChurn(t *testing.T) {
	taken := 0
	n := simtest.EverySeed(t, func(seed uint64) error {
		k, err := churnOf(seed, 0).run()
		taken += k
		return err
	})
	t.Logf("%d seeds, %d tickets taken, no ticket in two ranges", n, taken)
}

// churnOf draws a churn run's size from its seed.
func churnOf(seed uint64, b bug) churn {
	r := rand.New(rand.NewPCG(seed, 5))
	return churn{seed: seed, procs: 3 + r.IntN(30), n: 2 + r.IntN(12), bug: b}
}

// TestSimCatchesPlantedBugs: serving a CLEAVE from a process that is not
// the successor, or granting a ticket without taking the joiner as
// successor, must be caught.
func TestSimCatchesPlantedBugs(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator sweep: run without -race")
	}
	for _, b := range []struct {
		name string
		bug  bug
	}{{"cleave from anyone", bugCleaveFromAnyone}, {"grant keeps the old successor", bugKeepSucc}} {
		simtest.Catch(t, b.name, 300, func(seed uint64) error {
			_, err := churnOf(seed, b.bug).run()
			return err
		})
	}
}
