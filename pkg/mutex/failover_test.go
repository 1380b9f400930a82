package mutex

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// coordinatorOf is the daemon that leads central, and whether its
// takeover is over (it grants); node.None when none leads.
func coordinatorOf(s *sim.Sim[Msg]) (node.ID, bool) {
	for _, id := range s.IDs() {
		if !s.Alive(id) {
			continue
		}
		if p, ok := s.Machine(id).(*fcfsProbe); ok {
			if c := p.Machine.(*central); c.leading {
				return id, c.active
			}
		}
	}
	return node.None, false
}

// centralFailover: five daemons, two clients each taking "a" and "b" in
// turns; the coordinator is crashed, then its successor as soon as it
// has begun its takeover (or, a third of the time, just after the
// takeover, once it grants), then the next, three times back to back,
// each crashed daemon restarting after the next crash so that a majority
// stays up. Mutual exclusion and growing tokens are checked at every
// step; once the last crashed daemon is back (and loss stops), every
// waiting client must be served within the liveness wait.
func centralFailover(seed uint64, plant bool) (crashes int, err error) {
	r := rand.New(rand.NewPCG(seed, 21))
	opts := sim.Options{MinLatency: time.Millisecond, MaxLatency: time.Duration(2+r.IntN(8)) * time.Millisecond,
		Drop: r.Float64() * 0.05, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	w := newWorld(seed, 5, opts, Central, plant, nil)
	s := w.s
	if err := s.RunFor(time.Second); err != nil {
		return 0, err
	}
	var down []node.ID
	for round := 0; round < 3; round++ {
		// The next coordinator: wait (at most 3 s) until one leads, and
		// into or past its takeover.
		afterTakeover := r.IntN(3) == 0
		var c node.ID
		for i := 0; i < 3000; i++ {
			id, active := coordinatorOf(s)
			if id != node.None && (active || !afterTakeover) {
				c = id
				break
			}
			if err := s.RunFor(time.Millisecond); err != nil {
				return crashes, err
			}
		}
		if c == node.None {
			return crashes, fmt.Errorf("sim seed %d: no coordinator 3 s into failover %d", seed, round+1)
		}
		// Some way into the takeover wait (a lease), or into its first grants.
		if err := s.RunFor(time.Duration(r.Int64N(int64(300 * time.Millisecond)))); err != nil {
			return crashes, err
		}
		s.Crash(c)
		crashes++
		w.log = append(w.log, fmt.Sprintf("+%v crash coordinator %d", s.Now().Sub(opts.Start), c))
		if len(down) > 0 {
			s.Restart(down[0])
			down = down[1:]
		}
		down = append(down, c)
	}
	for _, id := range down {
		s.Restart(id)
	}
	// As after healing in runWorld: no more loss, and short holds, which
	// the liveness wait counts on.
	s.SetFaults(0, 0)
	w.longHolds = false
	back := s.Now()
	if err := s.RunFor(livenessWindow); err != nil {
		return crashes, err
	}
	for key, since := range w.wanting {
		id, c, _ := strings.Cut(key, "/")
		n, _ := strconv.Atoi(id)
		client, _ := strconv.ParseUint(c, 10, 64)
		if client/100 == uint64(w.inc[node.ID(n)]) && s.Now().Sub(since) > livenessWait {
			return crashes, fmt.Errorf("sim seed %d: liveness: client %s has waited %v (all daemons back %v ago)",
				seed, key, s.Now().Sub(since), s.Now().Sub(back))
		}
	}
	return crashes, nil
}

// TestSimCentralFailoverRepeated: central's coordinator fails over three
// times back to back, each successor crashed in or just after its
// takeover (see centralFailover). Replay one seed with -seed N.
func TestSimCentralFailoverRepeated(t *testing.T) {
	n := simtest.EverySeed(t, func(seed uint64) error {
		_, err := centralFailover(seed, false)
		return err
	})
	t.Logf("central: %d seeds passed, three coordinators crashed back to back in each", n)
}

// TestSimCentralFailoverCatchesPlantedBug: a successor that grants without
// waiting out the old coordinator's lease (the planted takeover bug)
// breaks mutual exclusion under the same schedule.
func TestSimCentralFailoverCatchesPlantedBug(t *testing.T) {
	caught, runs := 0, 0
	var first error
	for seed := uint64(1); seed <= 100 && caught < 5; seed++ {
		runs++
		if _, err := centralFailover(seed, true); err != nil && !strings.Contains(err.Error(), "liveness") {
			caught++
			if first == nil {
				first = err
			}
		}
	}
	if caught == 0 {
		t.Fatalf("the takeover without the one-lease wait was never caught in %d seeds", runs)
	}
	t.Logf("planted takeover bug caught in %d of %d seeds, e.g. %v", caught, runs, first)
}
