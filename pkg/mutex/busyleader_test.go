package mutex

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/election"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// starveCoordinator runs three central daemons with clients (runWorld's
// world) and, once a coordinator leads, freezes it again and again, as an
// overloaded host's scheduler does: first for less than the election's
// Timeout (100 to 140 ms), three times (its timers fire late, which raises its health
// score), then for longer than the Timeout (210 to 500 ms, below
// (1+Awareness)·Timeout).
// It returns how many coordinator changes the daemons reported after the
// first coordinator led, and the first of them. Mutual exclusion and
// growing tokens are checked throughout (runWorld's checkers).
func starveCoordinator(seed uint64, span time.Duration) (changes int, first string, err error) {
	_, changes, first, err = starveCoordinatorSim(seed, span)
	return changes, first, err
}

// starveCoordinatorSim is starveCoordinator, returning the simulation too.
func starveCoordinatorSim(seed uint64, span time.Duration) (w *world, changes int, first string, err error) {
	r := rand.New(rand.NewPCG(seed, 32))
	opts := sim.Options{MinLatency: time.Millisecond, MaxLatency: time.Duration(2+r.IntN(4)) * time.Millisecond,
		Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	w = newWorld(seed, 3, opts, Central, false, nil)
	s := w.s
	settled := false
	inner := s.OnEvent
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if ce, ok := ev.(CoordinatorEvent); ok && settled {
			if changes == 0 {
				first = fmt.Sprintf("node %d at +%v: coordinator %d term %d", id, at.Sub(opts.Start), ce.Coordinator, ce.Term)
			}
			changes++
		}
		return inner(at, id, ev)
	}
	if err := s.RunFor(time.Second); err != nil {
		return w, 0, "", err
	}
	c, active := coordinatorOf(s)
	if c == node.None || !active {
		return w, 0, "", fmt.Errorf("sim seed %d: no active coordinator after a second", seed)
	}
	settled = true
	d := election.DefaultConfig()
	// stall runs for a while, then freezes c for p.
	stall := func(p time.Duration) error {
		// More than a Timeout apart: signs of trouble closer together
		// count as one stall.
		if err := s.RunFor(d.Timeout + time.Duration(10+r.IntN(500))*time.Millisecond); err != nil {
			return err
		}
		s.Pause(c)
		if err := s.RunFor(p); err != nil {
			return err
		}
		s.Resume(c)
		return nil
	}
	// Late timers first: half a Timeout, so that its wake-ups, a Heartbeat
	// apart, come later than LateSlack (Heartbeat/2), and short enough
	// that with the Heartbeat before it the silence stays within the
	// unstretched Timeout.
	for i := 0; i < 3; i++ {
		if err := stall(d.Timeout/2 + time.Duration(r.IntN(40))*time.Millisecond); err != nil {
			return w, changes, first, err
		}
	}
	for end := s.Now().Add(span); s.Now().Before(end); {
		if err := stall(d.Timeout + time.Duration(10+r.IntN(290))*time.Millisecond); err != nil {
			return w, changes, first, err
		}
	}
	return w, changes, first, s.RunFor(100 * time.Millisecond)
}

// TestSimStarvedCoordinator: a coordinator whose own timers fire late
// says so in its election heartbeats, and its followers wait that much
// longer before they suspect it: stalls longer than the Timeout (but
// within the stretched one) change no coordinator, and exclusion holds.
func TestSimStarvedCoordinator(t *testing.T) {
	seeds := sim.Seeds()
	if len(seeds) > 200 {
		seeds = seeds[:200] // each seed runs about 12 s of three daemons
	}
	for _, seed := range seeds {
		changes, first, err := starveCoordinator(seed, 10*time.Second)
		if err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./pkg/mutex -run TestSimStarvedCoordinator -seed %d", seed, err, seed)
		}
		if changes != 0 {
			t.Fatalf("seed %d: %d coordinator changes while the coordinator was only slow, first %s\nreplay: go test ./pkg/mutex -run TestSimStarvedCoordinator -seed %d",
				seed, changes, first, seed)
		}
	}
	t.Logf("%d seeds: no coordinator change through 10 s of stalls of 210-500 ms", len(seeds))
}

// TestSimStarvedCoordinatorCrash: the stretch must not hide a real crash
// for long. After stalls have raised the coordinator's score to its
// maximum, it crashes: both survivors follow a new coordinator within 1 s
// ((1+Awareness)·Timeout of silence, an AnswerTimeout, message delays).
func TestSimStarvedCoordinatorCrash(t *testing.T) {
	seeds := sim.Seeds()
	if len(seeds) > 50 {
		seeds = seeds[:50]
	}
	const bound = time.Second
	var worst time.Duration
	for _, seed := range seeds {
		w, _, _, err := starveCoordinatorSim(seed, 2*time.Second)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		s := w.s
		c, _ := coordinatorOf(s)
		if c == node.None {
			t.Fatalf("seed %d: no coordinator before the crash", seed)
		}
		if k := s.Machine(c).(*fcfsProbe).Machine.(*central).el.Status().(map[string]any)["health"]; k != election.DefaultConfig().Awareness {
			t.Fatalf("seed %d: coordinator's health score %v before the crash, want the maximum", seed, k)
		}
		s.Crash(c)
		t0 := s.Now()
		follow := time.Duration(-1)
		for s.Now().Sub(t0) < 3*bound && follow < 0 {
			if err := s.RunFor(time.Millisecond); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			var coords []node.ID
			for _, id := range s.IDs() {
				if id != c {
					coord, _ := s.Machine(id).(*fcfsProbe).Machine.(*central).Coordinator()
					coords = append(coords, coord)
				}
			}
			if coords[0] != c && coords[0] != node.None && coords[0] == coords[1] {
				follow = s.Now().Sub(t0)
			}
		}
		if follow < 0 || follow > bound {
			t.Fatalf("seed %d: after the starved coordinator crashed, the survivors agreed on a new one after %v (-1: never), bound %v\nreplay: go test ./pkg/mutex -run TestSimStarvedCoordinatorCrash -seed %d",
				seed, follow, bound, seed)
		}
		worst = max(worst, follow)
	}
	t.Logf("%d seeds: a coordinator at the maximum health score crashed, survivors followed a new one after at most %v (bound %v)", len(seeds), worst, bound)
}
