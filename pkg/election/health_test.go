package election

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// starved is the outcome of one run in which a follower's scheduler
// starves: changes is how many leader or term changes, step-downs and lost
// leases the members reported after the first leader held its lease.
type starved struct {
	changes int
	first   string // the first change, for the failure message
	sim     *sim.Sim[Msg]
	leader  node.ID
}

// starveFollower runs five members with leases (elect's defaults) and
// freezes one follower again and again for longer than the Timeout, as an
// overloaded host's scheduler does: its timers fire late and the leader's
// heartbeats wait in its socket until it runs again (sim.Resume ticks
// first, then delivers what queued). awareness is Config.Awareness
// (negative: local health off).
func starveFollower(algo Algo, seed uint64, awareness int, span time.Duration, victim node.ID) (*starved, error) {
	r := rand.New(rand.NewPCG(seed, 32))
	ids := []node.ID{1, 2, 3, 4, 5}
	factory := func(id node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
		m, err := New(Config{ID: id, Peers: ids, Algo: algo, Rand: rng, Lease: DefaultConfig().Timeout, Awareness: awareness})
		if err != nil {
			panic(err)
		}
		return m
	}
	s := sim.New[Msg](sim.Options{Seed: seed, MinLatency: time.Millisecond, MaxLatency: time.Duration(2+r.IntN(8)) * time.Millisecond},
		Codec{}, factory, ids...)
	for _, id := range ids {
		s.SetClock(id, time.Duration(r.Int64N(int64(time.Second))), (r.Float64()*2-1)*200)
	}
	out := &starved{sim: s}
	settled := false
	leases := NewLeaseChecker()
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if le, ok := ev.(LeaseEvent); ok {
			if err := leases.Observe(id, at, le, s.RealTime(id, le.Until)); err != nil {
				return err
			}
			if !le.Held && settled {
				out.changes++
			}
		}
		if !settled {
			return nil
		}
		switch ev := ev.(type) {
		case LeaderEvent, StepDownEvent:
			if out.changes == 0 {
				out.first = fmt.Sprintf("node %d at %v: %v", id, at.Format("15:04:05.000"), ev)
			}
			out.changes++
		}
		return nil
	}
	if err := s.RunFor(time.Second); err != nil {
		return out, err
	}
	out.leader = 5
	if m := s.Machine(5).(*Machine); !m.leading || !m.lease.held {
		return out, fmt.Errorf("5 does not lead with a lease after a second")
	}
	settled = true
	if victim == 0 {
		victim = node.ID(1 + r.IntN(4))
	}
	for end := s.Now().Add(span); s.Now().Before(end); {
		if err := s.RunFor(time.Duration(50+r.IntN(500)) * time.Millisecond); err != nil {
			return out, err
		}
		s.Pause(victim)
		// Longer than the Timeout (200ms), up to 2.5 of them.
		if err := s.RunFor(time.Duration(210+r.IntN(290)) * time.Millisecond); err != nil {
			return out, err
		}
		s.Resume(victim)
	}
	return out, s.RunFor(100 * time.Millisecond)
}

// TestSimStarvedFollower: a follower whose ticks come late (its process
// was not scheduled for longer than the Timeout) does not start an
// election with local health on, and does without it (the switch proves
// the test can fail).
func TestSimStarvedFollower(t *testing.T) {
	seeds := sim.Seeds()
	if len(seeds) > 100 {
		seeds = seeds[:100] // each seed runs 11 s of five members
	}
	for _, algo := range []Algo{Bully, Ring, ChangRoberts} {
		t.Run(algo.String(), func(t *testing.T) {
			t.Parallel()
			without := 0
			for _, seed := range seeds {
				got, err := starveFollower(algo, seed, 0, 10*time.Second, 0)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if got.changes != 0 {
					t.Fatalf("seed %d: %d spurious changes with local health on, first %s\nreplay: %s",
						seed, got.changes, got.first, simtest.Replay(t, seed))
				}
				off, err := starveFollower(algo, seed, -1, 10*time.Second, 0)
				if err != nil {
					t.Fatalf("seed %d without local health: %v", seed, err)
				}
				without += off.changes
			}
			if without == 0 {
				t.Fatalf("without local health a starved follower never caused an election in %d seeds: the test cannot fail", len(seeds))
			}
			t.Logf("%s: %d seeds: 0 spurious changes with local health, %d without", algo, len(seeds), without)
		})
	}
}

// TestSimStarvedFailover: local health must not make a real crash go
// unnoticed. Member 4, the next leader, is starved until its score is up;
// then the leader crashes. Every survivor follows 4, and 4 holds its lease,
// within the stretched bound: (1+Awareness)·(Timeout+AnswerTimeout) plus
// message delays.
func TestSimStarvedFailover(t *testing.T) {
	seeds := sim.Seeds()
	if len(seeds) > 100 {
		seeds = seeds[:100]
	}
	d := DefaultConfig()
	bound := time.Duration(1+d.Awareness)*(d.Timeout+d.AnswerTimeout) + 100*time.Millisecond
	for _, algo := range []Algo{Bully, Ring, ChangRoberts} {
		t.Run(algo.String(), func(t *testing.T) {
			t.Parallel()
			var worst, worstLease time.Duration
			scored := 0
			for _, seed := range seeds {
				got, err := starveFollower(algo, seed, 0, 3*time.Second, 4)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				s := got.sim
				if s.Machine(4).(*Machine).health.Score(s.LocalNow(4)) > 0 {
					scored++
				}
				s.Crash(5)
				t0 := s.Now()
				var follow, lease time.Duration = -1, -1
				for s.Now().Sub(t0) < 3*bound && (follow < 0 || lease < 0) {
					if err := s.RunFor(time.Millisecond); err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					if follow < 0 && agreed(s, 4) == nil {
						follow = s.Now().Sub(t0)
					}
					if lease < 0 && s.Machine(4).(*Machine).lease.held {
						lease = s.Now().Sub(t0)
					}
				}
				if follow < 0 || follow > bound || lease < 0 || lease > bound {
					t.Fatalf("seed %d: after the leader crashed, survivors followed 4 after %v and 4 held its lease after %v (-1: never); bound %v\nreplay: %s",
						seed, follow, lease, bound, simtest.Replay(t, seed))
				}
				worst, worstLease = max(worst, follow), max(worstLease, lease)
			}
			if scored == 0 {
				t.Fatalf("the starved member never had a raised score at the crash: the test does not test the stretched case")
			}
			t.Logf("%s: %d seeds (%d with a raised score at the crash): failover at most %v, lease at most %v (bound %v)",
				algo, len(seeds), scored, worst, worstLease, bound)
		})
	}
}
