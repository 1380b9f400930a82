package ticketsim

import (
	"math"
	"testing"
	"time"
)

// TestSimReclaimPhases: a reclaim's phases, timed from the machines'
// events, add up to the reclaim's length and each has the length its
// rule gives it: detection about Suspect (3) rounds, the temporary
// coordinator at least the window (3) and a newcomer's grace (k+2), and
// the kill grace exactly Config.Margin.
func TestSimReclaimPhases(t *testing.T) {
	for _, margin := range []time.Duration{0, 500 * time.Millisecond} {
		r, err := Simulate(SimConfig{Processes: 200, Tickets: 50, K: 1, PF: 0.03, Alpha: 0.8, Rounds: 120, Seed: 5, Paper: true, Margin: margin})
		if err != nil {
			t.Fatal(err)
		}
		p := r.Phases
		t.Logf("margin %v: %d reclaims (%d with every phase), %.2f rounds: %+v", margin, r.Reclaims, r.PhasesSeen, r.ReclaimRoundsMean, p)
		if r.Reclaims < 5 || r.PhasesSeen < r.Reclaims*9/10 {
			t.Fatalf("margin %v: %d reclaims, %d with every phase seen", margin, r.Reclaims, r.PhasesSeen)
		}
		if r.PhasesSeen == r.Reclaims && math.Abs(p.Total()-r.ReclaimRoundsMean) > 0.01 {
			t.Errorf("margin %v: phases add up to %.2f rounds, the reclaims took %.2f", margin, p.Total(), r.ReclaimRoundsMean)
		}
		if p.Detection < 2 || p.Detection > 5 || p.Quorum < 0 || p.Temporary < 6 || p.HandOver < 0 || p.HandOver > 1 {
			t.Errorf("margin %v: phases out of their rules: %+v", margin, p)
		}
		if want := float64(margin) / float64(100*time.Millisecond); math.Abs(p.KillGrace-want) > 1e-9 {
			t.Errorf("kill grace %.2f rounds, want %.2f", p.KillGrace, want)
		}
	}
}
