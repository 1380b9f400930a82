package clocksync

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/clock"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// TestSimDisciplineProperties: a node whose clock starts up to ±500 ms off and
// drifts up to ±200 ppm polls a true reference every second over a lossy
// link (20% of polls lost) with asymmetric delays (each way 1–5 ms, so the
// measured offset is wrong by up to 2 ms). On every seed the disciplined
// time never goes backwards (checked every 10 ms), and after converging
// (60 s) it stays within convergedBound of true time.
const convergedBound = 5 * time.Millisecond

func runDiscipline(seed uint64, skewAt func(r *rand.Rand) (time.Duration, float64), planted bool) (worst time.Duration, err error) {
	return runDisciplineWith(seed, skewAt, Discipline{stepBack: planted}, convergedBound)
}

// runDisciplineWith runs d against a clock skewed by skewAt for 120 s,
// failing if it ever goes backwards or, with a positive bound, if it is
// further than bound from true time after 60 s.
func runDisciplineWith(seed uint64, skewAt func(r *rand.Rand) (time.Duration, float64), d Discipline, bound time.Duration) (worst time.Duration, err error) {
	r := rand.New(rand.NewPCG(seed, 9))
	skew, ppm := skewAt(r)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	raw := clock.Skewed{Offset: skew, DriftPPM: ppm, Epoch: epoch}
	var prev time.Time
	var t1 time.Time                 // the outstanding poll's send time on the disciplined clock
	var answerAt, serverAt time.Time // when its answer arrives (true time), and the server's stamp
	for ms := 0; ms <= 120_000; ms++ {
		trueNow := epoch.Add(time.Duration(ms) * time.Millisecond)
		rawNow := raw.At(trueNow)
		switch {
		case !answerAt.IsZero() && !trueNow.Before(answerAt):
			s := Sample{T1: t1, T2: serverAt, T3: serverAt, T4: d.Now(rawNow)}
			d.Update(rawNow, s.Offset())
			answerAt = time.Time{}
		case ms%1000 == 0 && answerAt.IsZero() && r.Float64() >= 0.2:
			up := time.Duration(1+r.IntN(5)) * time.Millisecond
			down := time.Duration(1+r.IntN(5)) * time.Millisecond
			t1 = d.Now(rawNow)
			serverAt, answerAt = trueNow.Add(up), trueNow.Add(up+down)
		}
		now := d.Now(rawNow)
		if !prev.IsZero() && now.Before(prev) {
			return 0, errAt(seed, ms, "went backwards by %v", prev.Sub(now))
		}
		prev = now
		if ms >= 60_000 {
			off := now.Sub(trueNow)
			if off < 0 {
				off = -off
			}
			worst = max(worst, off)
		}
	}
	if bound > 0 && worst > bound {
		return worst, errAt(seed, 0, "after convergence still %v from true time (skew %v, drift %.0f ppm)", worst, skew, ppm)
	}
	return worst, nil
}

// largeSkew is 1 to 5 s either way: beyond MakeStep (1 s), where a clock
// behind is stepped forward and a clock ahead must only be slewed.
func largeSkew(r *rand.Rand) (time.Duration, float64) {
	s := time.Second + time.Duration(r.Int64N(int64(4*time.Second)))
	if r.IntN(2) == 0 {
		s = -s
	}
	return s, r.Float64()*400 - 200
}

// TestSimDisciplineLargeSkews: clocks several seconds off. Behind, the
// discipline steps forward and converges as usual; ahead, it may only slew,
// so time never goes backwards — and it does get closer. (The ±500 ms runs
// never reach the step branch.)
func TestSimDisciplineLargeSkews(t *testing.T) {
	var worstBehind time.Duration
	for _, seed := range sim.Seeds() {
		skew, _ := largeSkew(rand.New(rand.NewPCG(seed, 9)))
		bound := convergedBound
		if skew > 0 {
			bound = 0 // ahead: slewing seconds away takes far longer than the run
		}
		w, err := runDisciplineWith(seed, largeSkew, Discipline{}, bound)
		if err != nil {
			t.Fatal(err)
		}
		if skew > 0 && w >= skew {
			t.Fatalf("seed %d: %v ahead, still %v ahead after 60 s: no progress", seed, skew, w)
		}
		if skew < 0 {
			worstBehind = max(worstBehind, w)
		}
	}
	t.Logf("large skews (1-5 s either way): %d seeds passed; never backwards; behind: worst error after 60 s %v (bound %v); ahead: closer every time",
		len(sim.Seeds()), worstBehind, convergedBound)
}

// TestDisciplineCatchesLargeStepBack: stepping back only past MakeStep,
// the mirror of the forward step, must be caught by the large skews.
func TestDisciplineCatchesLargeStepBack(t *testing.T) {
	caught := 0
	for seed := uint64(1); seed <= 50; seed++ {
		if _, err := runDisciplineWith(seed, largeSkew, Discipline{stepBackLarge: true}, 0); err != nil && strings.Contains(err.Error(), "backwards") {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("stepping back past MakeStep was never caught")
	}
	t.Logf("planted bug (step back past MakeStep) caught in %d/50 seeds", caught)
}

func TestSimDisciplineProperties(t *testing.T) {
	var worst time.Duration
	for _, seed := range sim.Seeds() {
		w, err := runDiscipline(seed, func(r *rand.Rand) (time.Duration, float64) {
			return time.Duration(r.Int64N(int64(time.Second))) - 500*time.Millisecond, r.Float64()*400 - 200
		}, false)
		if err != nil {
			t.Fatal(err)
		}
		worst = max(worst, w)
	}
	t.Logf("discipline: %d seeds passed (skew ±500ms, drift ±200ppm, 20%% loss, asymmetric 1-5ms paths); never backwards; worst error after 60s: %v (bound %v)",
		len(sim.Seeds()), worst, convergedBound)
}

type discErr struct{ msg string }

func (e discErr) Error() string { return e.msg }

func errAt(seed uint64, ms int, format string, args ...any) error {
	return discErr{msg: "sim seed " + itoa(seed) + " at +" + (time.Duration(ms) * time.Millisecond).String() + ": " + sprintf(format, args...)}
}

// TestSimDisciplineCatchesPlantedBug: a discipline that steps back when ahead
// must be caught going backwards.
func TestSimDisciplineCatchesPlantedBug(t *testing.T) {
	caught := 0
	for seed := uint64(1); seed <= 50; seed++ {
		_, err := runDiscipline(seed, func(r *rand.Rand) (time.Duration, float64) {
			return time.Duration(r.Int64N(int64(time.Second))) - 500*time.Millisecond, r.Float64()*400 - 200
		}, true)
		if err != nil && strings.Contains(err.Error(), "backwards") {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("stepping backwards was never caught")
	}
	t.Logf("planted bug (step back when ahead) caught in %d/50 seeds", caught)
}

// chainBound: in a chain of strata each node inherits its upstream's error
// and adds its own path asymmetry; after 90 s the last of three stays
// within this of true time.
const chainBound = 8 * time.Millisecond

// TestSimDisciplineChainProperties: strata 2, 3 and 4, each with its own skew (±500 ms)
// and drift (±200 ppm), each polling the one above over its own lossy,
// asymmetric path, stratum 2 polling true time. Every node's time is
// monotonic, and the chain converges.
func TestSimDisciplineChainProperties(t *testing.T) {
	var worst time.Duration
	for _, seed := range sim.Seeds() {
		w, err := runChain(seed, 3)
		if err != nil {
			t.Fatal(err)
		}
		worst = max(worst, w)
	}
	t.Logf("chain of 3 strata: %d seeds passed; never backwards; worst error of the last after 90s: %v (bound %v)", len(sim.Seeds()), worst, chainBound)
}

func runChain(seed uint64, n int) (time.Duration, error) {
	r := rand.New(rand.NewPCG(seed, 13))
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type member struct {
		raw              clock.Skewed
		d                Discipline
		prev, t1         time.Time
		answerAt, server time.Time
	}
	ms := make([]member, n)
	for i := range ms {
		ms[i].raw = clock.Skewed{Offset: time.Duration(r.Int64N(int64(time.Second))) - 500*time.Millisecond,
			DriftPPM: r.Float64()*400 - 200, Epoch: epoch}
	}
	// timeOf is member i's disciplined time at true time tn; -1 is the
	// stratum-1 reference.
	timeOf := func(i int, tn time.Time) time.Time {
		if i < 0 {
			return tn
		}
		return ms[i].d.Now(ms[i].raw.At(tn))
	}
	var worst time.Duration
	for step := 0; step <= 150_000; step++ {
		tn := epoch.Add(time.Duration(step) * time.Millisecond)
		for i := range ms {
			m := &ms[i]
			switch {
			case !m.answerAt.IsZero() && !tn.Before(m.answerAt):
				s := Sample{T1: m.t1, T2: m.server, T3: m.server, T4: timeOf(i, tn)}
				m.d.Update(m.raw.At(tn), s.Offset())
				m.answerAt = time.Time{}
			case step%1000 == 100*i && m.answerAt.IsZero() && r.Float64() >= 0.2:
				up := time.Duration(1+r.IntN(5)) * time.Millisecond
				down := time.Duration(1+r.IntN(5)) * time.Millisecond
				m.t1 = timeOf(i, tn)
				m.server, m.answerAt = timeOf(i-1, tn.Add(up)), tn.Add(up+down)
			}
			now := timeOf(i, tn)
			if !m.prev.IsZero() && now.Before(m.prev) {
				return 0, errAt(seed, step, "stratum %d went backwards by %v", i+2, m.prev.Sub(now))
			}
			m.prev = now
		}
		if step >= 90_000 {
			off := timeOf(n-1, tn).Sub(tn)
			worst = max(worst, max(off, -off))
		}
	}
	if worst > chainBound {
		return worst, errAt(seed, 0, "after 90 s stratum %d still %v from true time", n+1, worst)
	}
	return worst, nil
}
