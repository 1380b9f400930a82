package clocksync

import "time"

// Discipline turns a free-running local clock into one that follows a
// reference without ever going backwards (seed 002: "never set time back";
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
type Discipline struct {
	// MaxSlewPPM bounds the slew rate (default 83,333 ppm, chrony's).
	MaxSlewPPM float64
	// MakeStep: behind by more than this, step forward (default 1s; zero
	// or negative: use the default; use a huge value to never step).
	MakeStep time.Duration
	// Gain of the frequency estimate per update (default 0.1), and the
	// share of each measured offset that is slewed away (default 0.5):
	// below 1, single noisy measurements move the clock less.
	Gain, PhaseGain float64

	stepBack bool // planted bug for tests: step backwards when ahead

	started   bool
	baseRaw   time.Time
	base      time.Time
	remaining time.Duration
	freq      float64 // fractional frequency correction (ppm / 1e6)
	lastRaw   time.Time
	updates   int
}

func (d *Discipline) defaults() {
	if d.MaxSlewPPM <= 0 {
		d.MaxSlewPPM = 83333
	}
	if d.MakeStep <= 0 {
		d.MakeStep = time.Second
	}
	if d.Gain <= 0 {
		d.Gain = 0.1
	}
	if d.PhaseGain <= 0 || d.PhaseGain > 1 {
		d.PhaseGain = 0.5
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
	if d.started && d.updates > 0 {
		// What is still off after the slew had its chance is frequency
		// error: fold a share of it into the frequency correction.
		if dt := raw.Sub(d.lastRaw).Seconds(); dt > 0 {
			lim := raw.Sub(d.baseRaw).Seconds() * d.MaxSlewPPM / 1e6
			rate := offset.Seconds() / dt
			// Only an offset the old one left behind, and small enough to
			// be a rate error (within twice the ±500 ppm we correct), says
			// anything about frequency; bigger ones are phase to slew.
			if abs(d.remaining.Seconds()) <= lim && abs(rate) <= 1e-3 {
				d.freq += d.Gain * rate
				d.freq = max(-500e-6, min(500e-6, d.freq))
			}
		}
	}
	d.started = true
	d.updates++
	d.baseRaw, d.base, d.lastRaw = raw, now, raw
	d.remaining = time.Duration(float64(offset) * d.PhaseGain)
	if offset > d.MakeStep || d.stepBack && -offset > d.MakeStep/10 {
		d.base = d.base.Add(offset) // behind by a lot: step forward
		d.remaining = 0
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
