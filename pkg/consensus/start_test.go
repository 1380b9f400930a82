package consensus

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// asleep is a process that is not running yet: until wake, messages to it
// are lost (no socket is bound) and it sends nothing.
type asleep struct {
	m     *Machine
	wake  time.Time
	awake bool
}

func (a *asleep) Tick(now time.Time) {
	if now.Before(a.wake) {
		return
	}
	a.awake = true
	a.m.Tick(now)
}

func (a *asleep) Step(now time.Time, in node.Envelope[Msg]) error {
	if now.Before(a.wake) {
		return nil
	}
	if !a.awake {
		a.Tick(now) // the runner's first Tick comes before any message
	}
	return a.m.Step(now, in)
}

func (a *asleep) Ready() node.Ready[Msg] {
	if !a.awake {
		return node.Ready[Msg]{Wake: a.wake}
	}
	return a.m.Ready()
}

// Start-up schedules of staggeredRun.
const (
	startTogether  = iota // every process within half the barrier's Wait
	startOneEarly         // process 1 runs 1.3 s before the rest
	startScattered        // every process at a random time within 3 s
	startLate             // up to f+1 processes come up while the others run
	startSchedules
)

var startNames = []string{"together", "one early", "scattered", "late"}

// staggeredRun builds a FloodSet run without a shared start time (the
// start barrier) whose processes come up at different times, by one of
// the schedules above; up to f of them crash part-way through a
// broadcast (the crash model: no message between running processes is
// lost, doc.go). The last process to come up holds the minimum, so that
// a process deciding without the rounds it needs would disagree.
func staggeredRun(seed uint64, planted bug) (*run, int, int, sim.Options, time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 5))
	n := 3 + rng.IntN(5)
	f := 1 + rng.IntN(min(3, n-1))
	roundLen, wait, timeout := 50*time.Millisecond, 300*time.Millisecond, 2*time.Second
	schedule := rng.IntN(startSchedules)
	r := &run{cfgs: map[node.ID]Config{}, faulty: map[node.ID]bool{}}
	var ids []node.ID
	for i := 1; i <= n; i++ {
		ids = append(ids, node.ID(i))
	}
	wakes := map[node.ID]time.Duration{}
	jitter := func() time.Duration { return time.Duration(rng.Int64N(int64(wait / 2))) }
	late := rng.Perm(n)[:1+rng.IntN(min(f+1, n-1))]
	for i, id := range ids {
		switch schedule {
		case startTogether:
			wakes[id] = jitter()
		case startOneEarly:
			wakes[id] = 1300*time.Millisecond + jitter()
			if i == 0 {
				wakes[id] = 0
			}
		case startScattered:
			wakes[id] = time.Duration(rng.Int64N(int64(3 * time.Second)))
		case startLate:
			wakes[id] = jitter()
			if slices.Contains(late, i) {
				wakes[id] = wait + time.Duration(rng.Int64N(int64(time.Duration(f+3)*roundLen)))
			}
		}
	}
	latest := slices.Max(slices.Collect(func(yield func(time.Duration) bool) {
		for _, w := range wakes {
			if !yield(w) {
				return
			}
		}
	}))
	victims := rng.Perm(n)[:rng.IntN(f+1)]
	for i, id := range ids {
		cfg := Config{ID: id, Peers: ids, Algo: FloodSet, F: f, Value: strconv.Itoa(2 + rng.IntN(8)),
			Round: roundLen, Wait: wait, Timeout: timeout, bug: planted}
		if wakes[id] == latest {
			cfg.Value = "1" // the last to come up holds the minimum
		}
		if slices.Contains(victims, i) {
			cfg.CrashRound = 1 + rng.IntN(f+1)
			cfg.CrashAfter = rng.IntN(n)
			r.faulty[id] = true
		}
		r.cfgs[id] = cfg
	}
	r.wrap = func(id node.ID, m *Machine) node.Machine[Msg] {
		return &asleep{m: m, wake: epoch.Add(wakes[id])}
	}
	opts := sim.Options{MinLatency: time.Millisecond, MaxLatency: time.Duration(2+rng.IntN(15)) * time.Millisecond}
	horizon := latest + timeout + time.Duration(f+3)*roundLen
	return r, f, schedule, opts, horizon
}

// checkStaggered: every process that did not crash ends, by deciding or by
// an UndecidedEvent (a non-zero exit); no two decide differently, and the
// decision is some process's input. When every process came up in time
// (together, or one early), every process that did not crash decides, unless crashes in round 1 may have left it
// without a majority there.
func (r *run) checkStaggered(schedule int) error {
	ids := slices.Sorted(func(yield func(node.ID) bool) {
		for id := range r.cfgs {
			if !yield(id) {
				return
			}
		}
	})
	var first node.ID
	for _, id := range ids {
		d, decided := r.decided[id]
		_, undecided := r.undecided[id]
		switch {
		case r.faulty[id] && !decided:
			continue
		case !decided && !undecided:
			return fmt.Errorf("termination: process %d neither decided nor gave up", id)
		case !decided && (schedule == startTogether || schedule == startOneEarly) && !r.round1Minority():
			return fmt.Errorf("liveness: process %d came up in time but did not decide: %v", id, r.undecided[id].Reason)
		case !decided:
			continue
		}
		if !slices.ContainsFunc(ids, func(p node.ID) bool { return r.cfgs[p].Value == d.Value }) {
			return fmt.Errorf("validity: %q was decided but no process started with it", d.Value)
		}
		if first == 0 {
			first = id
		} else if d.Value != r.decided[first].Value {
			return fmt.Errorf("agreement: process %d decided %q, process %d decided %q, both exiting 0",
				first, r.decided[first].Value, id, d.Value)
		}
	}
	return nil
}

// TestSimStaggeredStarts: processes that come up at different times,
// without a shared start time, either agree or end without deciding
// (UndecidedEvent, a non-zero exit); never do two decide differently.
func TestSimStaggeredStarts(t *testing.T) {
	decidedAll, undecided := make([]int, startSchedules), make([]int, startSchedules)
	for _, seed := range sim.Seeds() {
		r, f, schedule, opts, horizon := staggeredRun(seed, 0)
		if _, err := r.execute(seed, opts, horizon); err != nil {
			t.Fatal(err)
		}
		if err := r.checkStaggered(schedule); err != nil {
			t.Fatalf("sim seed %d (%s, f=%d): %v\nreplay: %s\n%s",
				seed, startNames[schedule], f, err, simtest.Replay(t, seed), strings.Join(r.log, "\n"))
		}
		if len(r.undecided) > 0 {
			undecided[schedule]++
		} else {
			decidedAll[schedule]++
		}
	}
	var parts []string
	for s := range startSchedules {
		parts = append(parts, fmt.Sprintf("%s %d all decided, %d with some undecided", startNames[s], decidedAll[s], undecided[s]))
	}
	t.Logf("staggered starts: %d seeds passed, no silent disagreement (%s)", len(sim.Seeds()), strings.Join(parts, "; "))
}

// TestSimStaggeredStartsPlantedBug: a process that decides although it
// missed more than f peers in some round (the rule UndecidedEvent keeps)
// disagrees with the others on some seed, and the checker says so.
func TestSimStaggeredStartsPlantedBug(t *testing.T) {
	simtest.Catch(t, "decide without the rounds it needs", 300, func(seed uint64) error {
		r, _, schedule, opts, horizon := staggeredRun(seed, bugIgnoreMissed)
		r.execute(seed, opts, horizon)
		return r.checkStaggered(schedule)
	}, "agreement")
}
