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
	r := rand.New(rand.NewPCG(seed, 32))
	opts := sim.Options{MinLatency: time.Millisecond, MaxLatency: time.Duration(2+r.IntN(4)) * time.Millisecond,
		Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	w := newWorld(seed, 3, opts, Central, false, nil)
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
		return 0, "", err
	}
	c, active := coordinatorOf(s)
	if c == node.None || !active {
		return 0, "", fmt.Errorf("sim seed %d: no active coordinator after a second", seed)
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
			return changes, first, err
		}
	}
	for end := s.Now().Add(span); s.Now().Before(end); {
		if err := stall(d.Timeout + time.Duration(10+r.IntN(290))*time.Millisecond); err != nil {
			return changes, first, err
		}
	}
	return changes, first, s.RunFor(100 * time.Millisecond)
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
