package ticket

import (
	"testing"
	"time"
)

// TestTempOutlastsSupportBothWays checks the drift margin of the
// temporary coordinator's wait and of a voter's ban (tempFor; doc.go,
// "Safety": clock drift counts both ways): each clock may run off the
// true rate by up to Config.Drift, so the wait, timed on a clock running
// fast, must outlast on the true time line everything that can keep an
// excluded process's support alive (a window stretched to vouchMax, a
// newcomer's grace, a credit per process of E_pq: vouchMax + grace +
// dist·(Round+δ)), timed on a clock running slow. The random fault runs
// draw drifts of ±0.4% against the default 1%, and their intervals are
// a few windows long, so a margin that counts the drift once would pass
// there; this checks the bound itself over stretched windows and long
// exclusions, with no Margin to hide behind.
func TestTempOutlastsSupportBothWays(t *testing.T) {
	for _, drift := range []float64{0.001, 0.01, 0.02} {
		for _, window := range []int{3, 5, 12} {
			for _, stretch := range []int{1, 4, maxStretch} {
				for _, k := range []int{1, 2, 3} {
					m := &Machine{cfg: Config{K: k, Round: 100 * time.Millisecond, Delta: 50 * time.Millisecond,
						Window: window, Stretch: stretch, Drift: drift}}
					for dist := uint32(1); dist <= 64; dist *= 2 {
						support := m.vouchMax() + m.grace() + time.Duration(dist)*(m.cfg.Round+m.cfg.Delta)
						slowest := time.Duration(float64(support) / (1 - drift))
						wait := time.Duration(float64(m.tempFor(dist)) / (1 + drift))
						if wait < slowest {
							t.Fatalf("drift %g, window %d, stretch %d, k %d, dist %d: the wait lasts %v of true time on a fast clock, but support can last %v on a slow one",
								drift, window, stretch, k, dist, wait, slowest)
						}
					}
				}
			}
		}
	}
}
