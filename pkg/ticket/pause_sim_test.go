package ticket

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// pauseStats is what one mid-exclusion pause run did.
type pauseStats struct {
	pauses, excluderPauses, reclaimed int
	// beyond: a process other than the one being excluded was paused
	// for Suspect rounds or more, so its predecessor excludes it too: a
	// second failure among 2k+1 neighbours.
	beyond bool
	// live: after healing, every ticket lay in the range of a process
	// that may act.
	live bool
}

// midExclusion lists the processes that are in the middle of an
// exclusion at this instant: an excluder from the first round its
// successor leaves unanswered to the end of its wait as temporary
// coordinator, the successor it is excluding, and the voters whose ban
// is running.
func (p *pool) midExclusion() (excluders, others []node.ID) {
	now := func(id node.ID) time.Time { return p.s.LocalNow(id) }
	for _, id := range p.ids {
		m := p.machines[id]
		if !p.s.Alive(id) || !m.inRing() {
			continue
		}
		// From the first round its successor leaves unanswered (the
		// detection) to the end of the temporary coordinator's wait.
		detecting := m.st == stCoordinator && m.succ != id && m.succ != node.None && now(id).Sub(m.lastAck) >= m.cfg.Round
		if detecting || m.ex != nil || m.temp != nil {
			excluders = append(excluders, id)
			if m.succ != id && m.succ != node.None {
				others = append(others, m.succ)
			}
		}
		for _, b := range m.bans {
			if now(id).Before(b.until) {
				others = append(others, id)
				break
			}
		}
	}
	return excluders, others
}

// pauseRun: a settled core of 2k+4 (one more process waits outside); the
// link between member a and its successor b goes down both ways, so a
// excludes b while b is alive and still vouched for by the rest of its
// L. From then on, whoever is in the middle of that exclusion (a while
// it asks its voters and while it waits as temporary coordinator, b, the
// voters while their ban runs) is paused again and again, back to back:
// for a fraction of a round, for about the support window, or past the
// temporary coordinator's wait; the excluder also right after it sends
// EXCLUDE (its answer queues up) and right after it becomes temporary
// coordinator. In three runs of four a resumed process is handed every
// message it queued before its first tick (sim.Options.HeldFirst 1, as a
// real driver that reads its socket first); in the fourth the tick comes
// first. Theorem 4.1 is checked at every step and the epochs of every
// ticket taken; once the pauses and the cut end, whether every ticket
// lies in the range of a process that may act is reported (st.live).
func pauseRun(seed uint64, b bug) (st pauseStats, err error) {
	k := 1 + int(seed%2)
	procs := 2*k + 5
	held := 1.0
	if seed%4 == 0 {
		held = 0
	}
	margin := []time.Duration{0, 300 * time.Millisecond}[seed/2%2]
	// The support window: the default 3 rounds, or 12, where an excluder
	// paused for most of a second comes back with its support (its
	// predecessor has suspected it by then).
	window := []int{3, 12}[seed/4%2]
	// Config.Stretch: 1, or ticketd's 3 in half the runs (a late first
	// tick after a pause then stretches the paused process's timeouts).
	stretch := []int{1, 3}[seed/8%2]
	p, err := settledPoolWith(seed, procs, procs-1, k, window, margin, held, func(c *Config) { c.Phases, c.bug, c.Stretch = true, b, stretch })
	if err != nil {
		return st, err
	}
	s, r := p.s, p.r
	vouch := time.Duration(window) * 100 * time.Millisecond
	var succ node.ID // b, once the cut is made
	// At most one process is paused at a time; the next pause may follow
	// the resume at once (the same process or another), or up to a round
	// and a half later: back to back, but a process paused nearly all the
	// time is a crashed one, which the run already has.
	paused := node.None
	pause := func(who node.ID, d time.Duration) {
		s.Pause(who)
		paused = who
		st.pauses++
		if *traceFlag {
			fmt.Printf("-- pause %d for %v\n", who, d)
		}
		gap := time.Duration(r.Int64N(int64(150 * time.Millisecond)))
		s.At(s.Now().Add(d), func() { s.Resume(who) })
		s.At(s.Now().Add(d+gap), func() { paused = node.None })
	}
	// within draws a pause the process comes back from with its support
	// and its place: its last ALIVEs may be a round old, and its
	// predecessor suspects it after Suspect (3) rounds without an answer.
	within := func() time.Duration {
		return 10*time.Millisecond + time.Duration(r.Int64N(int64(min(vouch*6/10, 190*time.Millisecond))))
	}
	// longer notes a pause of who past that: a second failure next to b
	// (its predecessor excludes it), after which liveness is not asserted.
	longer := func(who node.ID, d time.Duration) time.Duration {
		if who != succ && d >= 200*time.Millisecond {
			st.beyond = true
		}
		return d
	}
	epochs := NewEpochChecker()
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if *traceFlag {
			fmt.Printf("%v %d %v\n", at.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), id, ev)
		}
		switch e := ev.(type) {
		case TakenEvent:
			return epochs.Observe(id, e)
		case ReclaimedEvent:
			st.reclaimed++
		case ExcludingEvent, TemporaryEvent:
			// The excluder has just sent EXCLUDE (its answer will queue up
			// while it sleeps), or has just become temporary coordinator.
			// In a third of those pauses it sleeps for 0.4 to 0.8 of the
			// window: with a window of 12 rounds it comes back with its
			// support, after its predecessor has suspected it.
			if paused == node.None && r.IntN(2) == 0 {
				st.excluderPauses++
				d := within()
				if r.IntN(3) == 0 {
					d = longer(id, vouch*4/10+time.Duration(r.Int64N(int64(vouch*4/10))))
				}
				pause(id, d)
			}
		}
		return nil
	}
	if err := s.RunFor(time.Duration(r.Int64N(int64(300 * time.Millisecond)))); err != nil {
		return st, err
	}
	core := p.coreOf()
	a := core[r.IntN(len(core))]
	succ = p.machines[a].succ
	if succ == a || succ == node.None {
		return st, nil
	}
	s.Cut(a, succ)
	s.Cut(succ, a)
	// The schedule: at each exclusion event of the excluder (above), and
	// every 10 ms while nobody is paused, pause a process in the middle of
	// the exclusion, the excluder half the time. Pauses within the window
	// bring the process back with its support; long ones outlast the
	// temporary coordinator's wait. Long pauses are for b, the process
	// being excluded, and rarely for anyone else: a second process lost
	// next to b is more than k = 1 can survive.
	const step = 10 * time.Millisecond
	span := 4*time.Second + 2*vouch
	for t := time.Duration(0); t < span; t += step {
		if paused == node.None {
			excluders, others := p.midExclusion()
			var who node.ID
			switch {
			case len(excluders) > 0 && (len(others) == 0 || r.IntN(2) == 0):
				who = excluders[r.IntN(len(excluders))]
			case len(others) > 0:
				who = others[r.IntN(len(others))]
			}
			if who != node.None && s.Alive(who) && !s.Paused(who) {
				d := within()
				if who == succ && r.IntN(2) == 0 || r.IntN(40) == 0 {
					d = longer(who, vouch+time.Duration(r.Int64N(int64(vouch+time.Second))))
				}
				if slices.Contains(excluders, who) {
					st.excluderPauses++
				}
				pause(who, d)
			}
		}
		if err := s.RunFor(step); err != nil {
			return st, err
		}
	}
	for paused != node.None {
		if err := s.RunFor(step); err != nil {
			return st, err
		}
	}
	s.Heal()
	if err := s.RunFor(3 * time.Second); err != nil {
		return st, err
	}
	// Liveness: every ticket lies in the range of a process that may act.
	n := p.machines[1].n
	owned := map[uint32]bool{}
	for _, id := range p.ids {
		if m := p.machines[id]; s.Alive(id) && m.MayAct(s.LocalNow(id)) {
			for _, t := range m.Range() {
				owned[t] = true
			}
		}
	}
	st.live = len(owned) == int(n)
	return st, nil
}

// TestSimPauseMidExclusion runs pauseRun over the seeds.
func TestSimPauseMidExclusion(t *testing.T) {
	var tot pauseStats
	live, beyond := 0, 0
	seeds := sim.Seeds()
	if raceOn {
		// One goroutine: the race detector has nothing to find in the
		// simulator; a tenth of the seeds keeps the race stage short.
		seeds = seeds[:max(1, len(seeds)/10)]
	}
	for _, seed := range seeds {
		st, err := pauseRun(seed, 0)
		if err != nil {
			t.Errorf("seed %d: %v\nreplay: go test ./pkg/ticket -run TestSimPauseMidExclusion -seed %d -ticket.trace", seed, err, seed)
		}
		tot.pauses += st.pauses
		tot.excluderPauses += st.excluderPauses
		tot.reclaimed += st.reclaimed
		if st.live {
			live++
		}
		if st.beyond {
			beyond++
		}
	}
	t.Logf("%d seeds run (Theorem 4.1 at every step, epochs of every ticket taken): %d pauses mid-exclusion (%d of an excluder), %d ranges reclaimed", len(seeds), tot.pauses, tot.excluderPauses, tot.reclaimed)
	t.Logf("liveness (reported): every ticket back in the range of a process that may act 3 s after healing in %d seeds; %d seeds paused a second process past Suspect rounds", live, beyond)
}

// TestSimPauseMidExclusionCatchesHeldVouch: a process that counts the
// vouches waiting in its socket before it checks its support
// (bugHeldVouch) acts on after its range was reclaimed: the process
// being excluded, paused before the bans and resumed after them, takes
// the ALIVEs queued while it slept as fresh. Only a resumed process
// handed its queued messages before its first tick shows it, so only the
// seeds with HeldFirst can catch it. The planted bug also dates those
// vouches at their reading (bugHeldFresh): dated before the stall (the
// rule) they could not revive the support whatever the order. Theorem
// 4.1 catches it; the test
// stops once it has been caught in three seeds.
func TestSimPauseMidExclusionCatchesHeldVouch(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator sweep: run without -race")
	}
	const seeds, enough = 200, 3
	caught, tried := 0, 0
	var first error
	for seed := uint64(1); seed <= seeds && caught < enough; seed++ {
		tried++
		if _, err := pauseRun(seed, bugHeldVouch); err != nil {
			caught++
			if first == nil {
				first = fmt.Errorf("seed %d: %w", seed, err)
			}
		}
	}
	if caught == 0 {
		t.Fatalf("planted bugHeldVouch never caught in %d seeds", seeds)
	}
	t.Logf("planted bugHeldVouch caught in %d of the first %d seeds, e.g. %v", caught, tried, first)
}
