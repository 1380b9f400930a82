package ticketsim

import (
	"fmt"
	"testing"
)

// TestTheorem41IndependentCrashes replays the two runs under independent
// crashes that broke Theorem 4.1 (docs/ticketd.md): a process of E_pq
// whose whole L had lost its support kept its own past the excluder's
// wait, vouched for by those same IDs after they had joined again on other
// tickets. An INTRO it sent to their old places brought it the new
// processes' ALIVEs (introFormer), and it counts vouches by ID. §4,
// Corollary 4.1 needs a process of E_pq to send nothing once it stops
// acting; introFormer now answers only an INTRO that names its own place
// (pkg/ticket's TestIntroFormerOwnPlace catches the planted
// bugIntroAnyPlace).
func TestTheorem41IndependentCrashes(t *testing.T) {
	for _, c := range []struct {
		pf   float64
		seed uint64
	}{
		{0.003, 2}, // round 31: ticket 3 in the ranges of 2 and 23
		{0.01, 37}, // round 33: ticket 30 in the ranges of 26 and 29
	} {
		t.Run(fmt.Sprintf("pf=%g/seed=%d", c.pf, c.seed), func(t *testing.T) {
			cfg := SimConfig{Processes: 200, Tickets: 50, K: 1, Alpha: 0.8, PF: c.pf, Rounds: 300, Seed: c.seed}
			if _, err := Simulate(cfg); err != nil {
				t.Fatalf("seed %d (ticketd sim --processes 200 --tickets 50 --rounds 300 --k 1 --alpha 0.8 --pf %g --seed %d): %v",
					c.seed, c.pf, c.seed, err)
			}
		})
	}
}
