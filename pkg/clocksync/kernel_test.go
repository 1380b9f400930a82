package clocksync

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/sim"
)

// kernelModel is the Linux clock as adjtimex(2) describes it: it runs at
// 1 + drift + freq, plus ±KernelSlewPPM while a single-shot offset is
// pending; a step moves it at once. plantedBug makes steps go backwards
// too, as a careless --apply would.
type kernelModel struct {
	sys     time.Duration // the system clock's reading, relative to the epoch
	drift   float64       // the oscillator's own error
	freq    float64       // ADJ_FREQUENCY
	pending time.Duration // single-shot offset still to slew
}

func (m *kernelModel) advance(dt time.Duration) {
	slew := time.Duration(float64(dt) * KernelSlewPPM / 1e6)
	switch {
	case m.pending > slew:
		m.pending -= slew
	case m.pending < -slew:
		m.pending += slew
		slew = -slew
	default:
		slew, m.pending = m.pending, 0
	}
	m.sys += time.Duration(float64(dt)*(1+m.drift+m.freq)) + slew
}

func (m *kernelModel) apply(p KernelPlan, planted bool, offset time.Duration) {
	if p.Step > 0 {
		m.sys += p.Step
	}
	if planted && offset < -10*time.Millisecond {
		m.sys += offset // what a step instead of a slew would do
	}
	m.pending = p.Slew
	m.freq = p.FreqPPM / 1e6
}

// kernelBound: with the phase slewed at only 500 ppm, a 50 ms error needs
// at least 100 s; after 300 s the clock stays within this of true time.
const kernelBound = 5 * time.Millisecond

// runKernel: a system clock up to ±50 ms off (or, on every fourth seed, 1–2 s
// behind, which is stepped) and drifting up to ±200 ppm polls a
// true reference every second; 20% of polls are lost and each path takes
// 1–5 ms, so single offsets are wrong by up to 2 ms. The clock must never
// go backwards and must converge.
func runKernel(seed uint64, planted bool) (time.Duration, error) {
	r := rand.New(rand.NewPCG(seed, 11))
	skew := time.Duration(r.Int64N(int64(100*time.Millisecond))) - 50*time.Millisecond
	if seed%4 == 0 {
		skew = -time.Second - time.Duration(r.Int64N(int64(time.Second)))
	}
	m := kernelModel{sys: skew, drift: (r.Float64()*400 - 200) / 1e6}
	var k KernelSlew
	const tick = 10 * time.Millisecond
	prev, worst := m.sys, time.Duration(0)
	for step := 0; step <= 60_000; step++ { // 600 s
		trueNow := time.Duration(step) * tick
		if step%100 == 0 && r.Float64() >= 0.2 {
			up := time.Duration(1+r.IntN(5)) * time.Millisecond
			down := time.Duration(1+r.IntN(5)) * time.Millisecond
			// The exchange is short: the clock moves by (up+down)·rate,
			// which is what T4 − T1 sees.
			t1 := m.sys
			t4 := t1 + up + down
			server := trueNow + up
			offset := ((server - t1) + (server - t4)) / 2
			m.apply(k.Update(time.Unix(0, 0).Add(m.sys), offset, m.pending), planted, offset)
		}
		if m.sys < prev {
			return 0, errAt(seed, int(trueNow/time.Millisecond), "went backwards by %v", prev-m.sys)
		}
		prev = m.sys
		if trueNow >= 300*time.Second {
			worst = max(worst, absDuration(m.sys-trueNow))
		}
		m.advance(tick)
	}
	if worst > kernelBound {
		return worst, errAt(seed, 0, "after 300 s still %v from true time (skew %v, drift %.0f ppm, freq estimate %.1f ppm)",
			worst, skew, m.drift*1e6, k.FrequencyPPM())
	}
	return worst, nil
}

func TestSimKernelSlewProperties(t *testing.T) {
	var worst time.Duration
	for _, seed := range sim.Seeds() {
		w, err := runKernel(seed, false)
		if err != nil {
			t.Fatal(err)
		}
		worst = max(worst, w)
	}
	t.Logf("kernel slew: %d seeds passed (skew ±50ms or 1-2s behind, drift ±200ppm, 20%% loss, asymmetric 1-5ms paths); never backwards; worst error after 300s: %v (bound %v)",
		len(sim.Seeds()), worst, kernelBound)
}

func TestSimKernelSlewCatchesPlantedBug(t *testing.T) {
	caught := 0
	for seed := uint64(1); seed <= 50; seed++ {
		if _, err := runKernel(seed, true); err != nil && strings.Contains(err.Error(), "backwards") {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("stepping backwards was never caught")
	}
	t.Logf("planted backward step caught in %d/50 seeds", caught)
}

func TestKernelSlewPlans(t *testing.T) {
	var k KernelSlew
	now := time.Unix(1000, 0)
	if p := k.Update(now, 3*time.Second, 0); p.Step != 3*time.Second || p.Slew != 0 {
		t.Fatalf("behind by 3s: %+v, want a 3s forward step", p)
	}
	if p := k.Update(now.Add(time.Second), -3*time.Second, 0); p.Step != 0 || p.Slew != -1500*time.Millisecond {
		t.Fatalf("ahead by 3s: %+v, want half slewed back, never a step", p)
	}
	k = KernelSlew{BaseFreqPPM: 480}
	k.fll.freq = 100e-6
	if p := k.Update(now, 0, 0); p.FreqPPM != 500 {
		t.Fatalf("frequency %v ppm, want clamped to the kernel's 500", p.FreqPPM)
	}
}
