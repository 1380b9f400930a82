package clocksync

import (
	"fmt"
	"time"
)

// DefaultDriftPPM is the drift bound ρ assumed when none is given: 500
// ppm, the largest frequency correction a Linux kernel clock accepts, so a
// clock that drifts faster cannot be disciplined at all.
const DefaultDriftPPM = 500

// ResyncInterval is the longest interval between synchronisations that
// keeps any two clocks within maxSkew of each other when each drifts by at
// most driftPPM: Tanenbaum ch. 6 ("Clock synchronization"), 1 − ρ ≤ dC/dt ≤ 1 + ρ,
// so two clocks drift apart by at most 2ρ per second, and never letting
// them differ by more than δ means synchronising at least every δ/(2ρ).
// A driftPPM ≤ 0 means DefaultDriftPPM.
//
// The rule assumes each synchronisation sets the clock right at once. A
// Discipline slews away only PhaseGain g of each measured offset, so
// without its frequency loop a clock drifting at ρ and polled every T
// settles at offsets up to ρT/g from its reference; SlewedResyncInterval
// shortens the interval by g to keep δ.
func ResyncInterval(maxSkew time.Duration, driftPPM float64) (time.Duration, error) {
	if maxSkew <= 0 {
		return 0, fmt.Errorf("clocksync: the skew bound must be positive, not %v", maxSkew)
	}
	if driftPPM <= 0 {
		driftPPM = DefaultDriftPPM
	}
	if driftPPM > 1e6 {
		return 0, fmt.Errorf("clocksync: a drift of %g ppm is more than the clock's own rate", driftPPM)
	}
	return time.Duration(float64(maxSkew) / (2 * driftPPM / 1e6)), nil
}

// SlewedResyncInterval is ResyncInterval for clocks corrected by a
// Discipline with the default phase gain: g·δ/(2ρ), so that each clock
// stays within ρT/g = δ/2 of its reference and any two within δ.
func SlewedResyncInterval(maxSkew time.Duration, driftPPM float64) (time.Duration, error) {
	every, err := ResyncInterval(maxSkew, driftPPM)
	return time.Duration(float64(every) * DefaultPhaseGain), err
}
