package clocksync

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/clock"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// TestDisciplineProperties: a node whose clock starts up to ±500 ms off and
// drifts up to ±200 ppm polls a true reference every second over a lossy
// link (20% of polls lost) with asymmetric delays (each way 1–5 ms, so the
// measured offset is wrong by up to 2 ms). On every seed the disciplined
// time never goes backwards (checked every 10 ms), and after converging
// (60 s) it stays within convergedBound of true time.
const convergedBound = 5 * time.Millisecond

func runDiscipline(seed uint64, skewAt func(r *rand.Rand) (time.Duration, float64), planted bool) (worst time.Duration, err error) {
	r := rand.New(rand.NewPCG(seed, 9))
	skew, ppm := skewAt(r)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	raw := clock.Skewed{Offset: skew, DriftPPM: ppm, Epoch: epoch}
	d := Discipline{stepBack: planted}
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
	if worst > convergedBound {
		return worst, errAt(seed, 0, "after convergence still %v from true time (skew %v, drift %.0f ppm)", worst, skew, ppm)
	}
	return worst, nil
}

func TestDisciplineProperties(t *testing.T) {
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

// TestDisciplineCatchesPlantedBug: a discipline that steps back when ahead
// must be caught going backwards.
func TestDisciplineCatchesPlantedBug(t *testing.T) {
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
