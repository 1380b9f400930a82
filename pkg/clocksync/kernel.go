package clocksync

import "time"

// KernelSlewPPM is the fixed rate at which the Linux kernel slews an
// adjtime()-style single-shot offset (ADJ_OFFSET_SINGLESHOT): 500 µs per
// second.
const KernelSlewPPM = 500

// KernelSlew disciplines the real system clock through the kernel's
// adjtimex(2) interface, with the same rules as Discipline: never set back
// (Tanenbaum ch. 6), step forward only when behind by more than MakeStep, and
// estimate the frequency error with the shared frequency-locked loop.
//
// The kernel, not this code, moves the clock, so a plan says what to ask
// of it. Phase goes in as a single-shot offset, which the kernel slews at
// KernelSlewPPM and then stops by itself: a correction is never left
// running by a killed process, and the clock's rate stays within
// 1 ± (500 + 500) ppm, so it never runs backwards. Frequency goes in as an
// absolute ADJ_FREQUENCY value: the kernel's frequency when discipline
// began (BaseFreqPPM, e.g. left there by an earlier chronyd run) plus this
// loop's estimate, within the kernel's ±500 ppm.
//
// Pure: the caller reads the kernel, calls Update, and applies the plan.
type KernelSlew struct {
	MakeStep    time.Duration // default 1s
	PhaseGain   float64       // default 0.5, as in Discipline
	BaseFreqPPM float64

	fll freqLoop
}

// KernelPlan is one correction for the kernel.
type KernelPlan struct {
	// Step, when positive, is a forward step to make first (ADJ_SETOFFSET).
	Step time.Duration
	// Slew replaces whatever single-shot offset the kernel still had.
	Slew time.Duration
	// FreqPPM is the absolute frequency to set (ADJ_FREQUENCY).
	FreqPPM float64
}

// Update takes, at system time now, the measured offset of the reference
// ahead of the system clock and what the kernel still has to slew of the
// previous correction (adjtimex ADJ_OFFSET_SS_READ).
func (k *KernelSlew) Update(now time.Time, offset, pending time.Duration) KernelPlan {
	d := Discipline{MakeStep: k.MakeStep, PhaseGain: k.PhaseGain}
	d.defaults()
	// The kernel slews slowly, so unlike with Discipline the previous
	// correction is often still running when the next offset comes in;
	// the loop takes out what it applied so far.
	freq := k.fll.update(now, offset, pending)
	plan := KernelPlan{FreqPPM: max(-MaxFreq*1e6, min(MaxFreq*1e6, k.BaseFreqPPM+freq*1e6))}
	if offset > d.MakeStep {
		plan.Step = offset
		k.fll.fixed(offset)
	} else {
		plan.Slew = time.Duration(float64(offset) * d.PhaseGain)
		k.fll.fixed(plan.Slew)
	}
	return plan
}

// FrequencyPPM is this loop's estimate of the clock's frequency error,
// relative to BaseFreqPPM.
func (k *KernelSlew) FrequencyPPM() float64 { return k.fll.freq * 1e6 }

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
