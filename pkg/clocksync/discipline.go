package clocksync

import "time"

// Discipline turns a free-running local clock into one that follows a
// reference without ever going backwards (Tanenbaum ch. 6: "never set time back";
// the clock is slowed down instead). It is pure: every call takes the raw
// local reading.
//
// Between updates the disciplined time is
//
//	base + e·(1 + freq) + clamp(remaining, ±MaxSlew·e)
//
// for raw time e since the last update: the frequency correction runs all
// the time, and the outstanding offset is absorbed at no more than MaxSlew.
// Its slope is at least 1 + freq − MaxSlew > 0, so it never decreases.
// Being behind by more than MakeStep is corrected at once by a step
// forward; being ahead never is. The frequency error is estimated from
// the offsets left after each poll (a frequency-locked loop), so a drifting
// clock stays close between polls.
// DefaultPhaseGain is Discipline.PhaseGain's default.
const DefaultPhaseGain = 0.5

type Discipline struct {
	// MaxSlewPPM bounds the slew rate (default 83,333 ppm, chrony's).
	MaxSlewPPM float64
	// MakeStep: behind by more than this, step forward (default 1s; zero
	// or negative: use the default; use a huge value to never step).
	MakeStep time.Duration
	// PhaseGain is the share of each measured offset that is slewed away
	// (default 0.5): below 1, single noisy measurements move the clock less.
	PhaseGain float64

	stepBack bool // planted bug for tests: step backwards when ahead
	// stepBackLarge plants the subtler bug: step backwards only when ahead
	// by more than MakeStep, as a forward step is made. Tests only.
	stepBackLarge bool

	started   bool
	baseRaw   time.Time
	base      time.Time
	remaining time.Duration
	freq      float64 // fractional frequency correction (ppm / 1e6)
	fll       freqLoop
}

func (d *Discipline) defaults() {
	if d.MaxSlewPPM <= 0 {
		d.MaxSlewPPM = 83333
	}
	if d.MakeStep <= 0 {
		d.MakeStep = time.Second
	}
	if d.PhaseGain <= 0 || d.PhaseGain > 1 {
		d.PhaseGain = DefaultPhaseGain
	}
}

// Now returns the disciplined time at raw local reading raw.
func (d *Discipline) Now(raw time.Time) time.Time {
	d.defaults()
	if !d.started {
		return raw
	}
	e := raw.Sub(d.baseRaw)
	if e < 0 {
		e = 0
	}
	lim := time.Duration(float64(e) * d.MaxSlewPPM / 1e6)
	corr := max(-lim, min(lim, d.remaining))
	return d.base.Add(time.Duration(float64(e)*(1+d.freq)) + corr)
}

// Pending is the correction still to be slewed at raw.
func (d *Discipline) Pending(raw time.Time) time.Duration {
	d.defaults()
	if !d.started {
		return 0
	}
	e := raw.Sub(d.baseRaw)
	if e < 0 {
		e = 0
	}
	lim := time.Duration(float64(e) * d.MaxSlewPPM / 1e6)
	return d.remaining - max(-lim, min(lim, d.remaining))
}

// Update takes a measured offset at raw: how far the reference is ahead of
// this disciplined clock (θ measured against Now).
func (d *Discipline) Update(raw time.Time, offset time.Duration) {
	d.defaults()
	now := d.Now(raw)
	d.freq = d.fll.update(raw, offset, d.Pending(raw))
	d.started = true
	d.baseRaw, d.base = raw, now
	d.remaining = time.Duration(float64(offset) * d.PhaseGain)
	if offset > d.MakeStep || d.stepBack && -offset > d.MakeStep/10 || d.stepBackLarge && -offset > d.MakeStep {
		d.base = d.base.Add(offset) // behind by a lot: step forward
		d.fll.fixed(offset)
		d.remaining = 0
	} else {
		d.fll.fixed(d.remaining)
	}
}

// FrequencyPPM is the current frequency correction.
func (d *Discipline) FrequencyPPM() float64 { return d.freq * 1e6 }

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// freqLoop is the frequency-locked loop both disciplines share. Between
// two updates the offset should change by exactly the correction applied
// in between; what else changed is frequency error. Summed over a window,
// the measurement noise of the offsets cancels but for its two ends, so the
// rate is read off FLLWindow of them, not off one noisy poll, and half of
// it joins the frequency correction, which stays within ±MaxFreq.
type freqLoop struct {
	started    bool
	last       time.Time
	lastOffset time.Duration // measured at the last update
	lastFix    time.Duration // the correction started then
	resid      time.Duration // unexplained change of offset in this window
	span       time.Duration // the window's length so far
	freq       float64
}

// FLLWindow is how long the frequency-locked loop sums before it corrects
// the frequency: with ±1 ms of path asymmetry per sample, a 16 s window
// reads the rate to about ±125 ppm, and half of that is taken.
const FLLWindow = 16 * time.Second

// update takes, at local time now, the measured offset and what is still
// pending of the last correction, and returns the frequency correction.
func (f *freqLoop) update(now time.Time, offset, pending time.Duration) float64 {
	if f.started {
		f.resid += offset - (f.lastOffset - (f.lastFix - pending))
		f.span += now.Sub(f.last)
		if f.span >= FLLWindow {
			if rate := f.resid.Seconds() / f.span.Seconds(); abs(rate) <= 2*MaxFreq {
				f.freq = max(-MaxFreq, min(MaxFreq, f.freq+0.5*rate))
			}
			f.resid, f.span = 0, 0
		}
	}
	f.started, f.last, f.lastOffset = true, now, offset
	return f.freq
}

// fixed records the correction started at the last update.
func (f *freqLoop) fixed(fix time.Duration) { f.lastFix = fix }

// MaxFreq bounds every frequency correction: 500 ppm.
const MaxFreq = 500e-6
