package ticketsim

import (
	"reflect"
	"testing"
	"time"
)

// TestSimulateReplays: one seed, one run; a seed is how a failure is
// told and replayed.
func TestSimulateReplays(t *testing.T) {
	cfg := SimConfig{Processes: 120, Tickets: 30, K: 1, PF: 0.003, Alpha: 0.8, Rounds: 150, Seed: 7}
	a, err := Simulate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Simulate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.Elapsed, b.Elapsed = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 7 ran twice differently:\n%+v\n%+v", a, b)
	}
	if a.Crashes == 0 || a.Attempts == 0 {
		t.Fatalf("nothing happened: %+v", a)
	}
}

// TestSimAvailabilityAnalysis reproduces the seed's availability analysis
// (§4, "Availability") on both sides of its bound p_f < ½(1−α), for the
// three α of docs/ticketd.md's table. Far below the bound, acquisitions
// succeed w.h.p.; above it, they mostly fail. Between the two the real
// protocol falls short of the bound (docs/ticketd.md's table says where and
// why), so that region is reported, not asserted.
func TestSimAvailabilityAnalysis(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("simulates 18 pools (scripts/test.sh runs it without the race detector)")
	}
	for _, a := range []float64{0.5, 0.8, 0.9} {
		bound := (1 - a) / 2
		for _, c := range []struct {
			pf       float64
			min, max float64
		}{{0.0001, 0.95, 1}, {2 * bound, 0, 0.5}} {
			pts, err := Sweep(SimConfig{Processes: 400, Tickets: 100, K: 2, Rounds: 600, Seed: 1}, []float64{a}, []float64{c.pf}, 4, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := pts[0]
			t.Log(p.Line())
			if p.Attempts < 10 {
				t.Fatalf("α %.1f p_f %g: only %d acquisitions judged", a, c.pf, p.Attempts)
			}
			if p.Availability < c.min || p.Availability > c.max {
				t.Errorf("α %.1f p_f %g (bound %.2f): availability %.3f, want %.2f to %.2f", a, c.pf, bound, p.Availability, c.min, c.max)
			}
		}
	}
}

// TestSimulateAvailabilityPaper plays the analysis under its own
// assumptions (SimConfig.Paper: p_f per round of the analysis, crashes
// only within §4's fault model) and asserts the seed's claim: below
// ½(1−α) a process acquires a ticket w.h.p. (here: 95% of acquisitions
// within 30 rounds, over three seeds), and no live process loses its
// support. Twice the bound is reported.
func TestSimulateAvailabilityPaper(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("simulates 27 pools (scripts/test.sh runs it without the race detector)")
	}
	for _, a := range []float64{0.5, 0.8, 0.9} {
		bound := (1 - a) / 2
		for _, pf := range []float64{bound / 5, bound * 0.8, bound * 2} {
			pts, err := Sweep(SimConfig{Processes: 400, Tickets: 100, K: 1, Rounds: 400, Seed: 1, Paper: true}, []float64{a}, []float64{pf}, 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := pts[0]
			t.Log(p.Line())
			if pf > bound {
				continue
			}
			if p.Attempts < 10 {
				t.Fatalf("α %.1f p_f %g: only %d acquisitions judged", a, pf, p.Attempts)
			}
			if p.Availability < 0.95 || p.Excluded > 0 {
				t.Errorf("α %.1f p_f %g (below the bound %.2f): availability %.3f, %d live processes lost their support; want ≥ 0.95 and none",
					a, pf, bound, p.Availability, p.Excluded)
			}
		}
	}
}

// TestSimulateAvailabilityPaperAtTheBound: the hardest cell below the
// bound (α 0.5, p_f at 0.8 of ½(1−α)) on seeds 4 to 6 besides the 1 to 3
// above: seeds where a process pushed out of its predecessor's 2k+1
// closest by a join, and told so one UPDATE early, lost its ALIVEs for
// good until an INTRO brought them back (pkg/ticket doc.go, "Why the
// longer wait seemed to strand live processes"; mutant 80 takes that
// rule out and 61 to 65 live processes per seed lose their place).
func TestSimulateAvailabilityPaperAtTheBound(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("simulates 3 pools of 400 processes (scripts/test.sh runs it without the race detector)")
	}
	pts, err := Sweep(SimConfig{Processes: 400, Tickets: 100, K: 1, Rounds: 400, Seed: 4, Paper: true}, []float64{0.5}, []float64{0.2}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := pts[0]
	t.Log(p.Line())
	if p.Availability < 0.95 || p.Excluded > 0 {
		t.Errorf("α 0.5 p_f 0.2, seeds 4 to 6: availability %.3f, %d live processes lost their support; want ≥ 0.95 and none", p.Availability, p.Excluded)
	}
}

// TestSimulatePaperStrandedSeeds: seeds 1 to 20 of the cell α = 0.5,
// p_f = 0.2 (400 processes, 100 tickets, 400 rounds; docs/ticketd.md
// records them) lose no live process. Judged by the Ls alone, seed 10
// lost 66 to 77 (an INTRO's ALIVEs came back a round late), and with
// those ALIVEs sent at once seed 1 lost 68 to two crashes in one round
// that took two of a live process's three closest predecessors, one of
// them a newcomer the Ls did not name yet (ringKeeps; pkg/ticket's
// doc.go, "Why the longer wait seemed to strand live processes").
// Mutant 80 (no ALIVEs back on an INTRO) is caught on seeds 10, 12, 15,
// 18 and 19; mutant 84 (crashes judged by the Ls alone) brings seed 10's
// loss back.
func TestSimulatePaperStrandedSeeds(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("simulates 20 pools of 400 processes (scripts/test.sh runs it without the race detector)")
	}
	for seed := uint64(1); seed <= 20; seed++ {
		r, err := Simulate(SimConfig{Processes: 400, Tickets: 100, K: 1, Alpha: 0.5, PF: 0.2, Rounds: 400, Seed: seed, Paper: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.Excluded > 0 {
			t.Errorf("seed %d (ticketd sim --processes 400 --tickets 100 --alpha 0.5 -k 1 --pf 0.2 --rounds 400 --model paper --seed %d): %d live processes lost their support, want none",
				seed, seed, r.Excluded)
		}
	}
}

// TestSimulateLarge: the 10,000 processes and 1,000 tickets, 100
// rounds after the warm-up, Theorem 4.1 checked every round.
func TestSimulateLarge(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("10,000 processes")
	}
	r, err := Simulate(SimConfig{Processes: 10000, Tickets: 1000, K: 1, PF: 0.0001, Alpha: 0.8, Rounds: 100, Seed: 1, Round: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r.Text())
	if r.HoldersMean < 700 || r.MaxAliveSent > 3 {
		t.Fatalf("%+v", r)
	}
}
