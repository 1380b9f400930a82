package coords

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The synthetic worlds: points in a plane with access links and 5% noise,
// and the same with a tenth of the paths detouring three times as long.
var worlds = []struct {
	name string
	s    Synth
}{
	{"plane+heights", Synth{N: 120, Spread: 150, MaxHeight: 15, Noise: 0.05}},
	{"triangle violations", Synth{N: 120, Spread: 150, MaxHeight: 15, Noise: 0.05, Detours: 0.1, Detour: 3}},
}

func TestVivaldiConverges(t *testing.T) {
	for _, w := range worlds {
		for seed := uint64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewPCG(seed, 11))
			rtt, _ := w.s.Matrix(rng)
			pos, meds := RunVivaldi(rtt, 2, 400, rng)
			errs := Errors(pos, rtt)
			med, p90 := Quantile(errs, 0.5), Quantile(errs, 0.9)
			// Convergence: the median error stops falling: the last 50
			// rounds are within 2 points of the 50 before.
			last, before := meanOf(meds[350:]), meanOf(meds[300:350])
			if last-before > 0.02 || before-last > 0.02 {
				t.Errorf("%s seed %d: median error still moving: %.3f then %.3f", w.name, seed, before, last)
			}
			if meds[0] < 2*med {
				t.Errorf("%s seed %d: the error barely fell: %.3f at first, %.3f at the end", w.name, seed, meds[0], med)
			}
			limit := 0.15
			if w.s.Detours > 0 {
				limit = 0.3
			}
			if med > limit {
				t.Errorf("%s seed %d: median relative error %.3f, above %.2f", w.name, seed, med, limit)
			}
			t.Logf("vivaldi %s seed %d: median %.3f, 90th percentile %.3f (round 1: %.3f)", w.name, seed, med, p90, meds[0])
		}
	}
}

// TestVivaldiStandingStillFails: with no step (cc = 0) nothing converges,
// so the test above can fail.
func TestVivaldiStandingStillFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 11))
	rtt, _ := worlds[0].s.Matrix(rng)
	vs := make([]*Vivaldi, len(rtt))
	for i := range vs {
		vs[i] = NewVivaldi(2, rng)
		vs[i].cc = 0
	}
	for range 100 {
		for i, v := range vs {
			j := (i + 1 + rng.IntN(len(vs)-1)) % len(vs)
			v.Update(Sample(rtt, i, j, rng), vs[j].Pos, vs[j].Err)
		}
	}
	pos := make([]Coord, len(vs))
	for i, v := range vs {
		pos[i] = v.Pos
	}
	if med := Quantile(Errors(pos, rtt), 0.5); med < 0.5 {
		t.Fatalf("a Vivaldi that never moves has median error %.3f: the checks cannot tell", med)
	}
}

func TestGNPWithinFactorTwo(t *testing.T) {
	for _, w := range worlds {
		for _, k := range []int{6, 7} {
			rng := rand.New(rand.NewPCG(uint64(k), 12))
			rtt, _ := w.s.Matrix(rng)
			pos := RunGNP(rtt, SpreadLandmarks(rtt, k), 2, rng)
			errs := Errors(pos, rtt)
			within := 0
			for i := range pos {
				for j := i + 1; j < len(pos); j++ {
					p, m := Dist(pos[i], pos[j]), rtt[i][j]
					if p <= 2*m && m <= 2*p {
						within++
					}
				}
			}
			frac := float64(within) / float64(len(errs))
			// Tanenbaum ch. 6: 6 or 7 landmarks keep predictions within a factor
			// of 2 (Szymaniak et al. 2004). Paths that detour three times
			// as long cannot be predicted by any metric space: a tenth of
			// the pairs, and their neighbours' fits suffer too.
			want := 0.9
			if w.s.Detours > 0 {
				want = 0.65
			}
			if frac < want {
				t.Errorf("%s, %d landmarks: only %.1f%% of pairs within a factor of 2", w.name, k, 100*frac)
			}
			t.Logf("gnp %s, %d landmarks: median %.3f, 90th percentile %.3f, %.1f%% within a factor of 2",
				w.name, k, Quantile(errs, 0.5), Quantile(errs, 0.9), 100*frac)
		}
	}
}

// TestGNPDimensionsAllPairs: Tanenbaum ch. 6 ("Geometric overlay networks",
// after Szymaniak et al. 2004) says the dimension m of GNP's space can be
// as small as 6 or 7 with predictions within a factor 2 of the latency
// "for arbitrary nodes P and Q". For m = 2..8, with m+1 landmarks spread
// by farthest-point choice, it reports the share of all pairs of ordinary
// (non-landmark) hosts predicted within a factor 2, on a plain plane, the
// plane with access links, and with a tenth of the paths detouring three
// times as long; and holds m = 6..7 to the seed's claim on the metric
// worlds.
func TestGNPDimensionsAllPairs(t *testing.T) {
	ws := []struct {
		name string
		s    Synth
		want float64 // at m = 6..7
	}{
		{"plane", Synth{N: 120, Spread: 150, Noise: 0.05}, 0.99},
		{"heights", Synth{N: 120, Spread: 150, MaxHeight: 15, Noise: 0.05}, 0.99},
		{"detours", Synth{N: 120, Spread: 150, MaxHeight: 15, Noise: 0.05, Detours: 0.1, Detour: 3}, 0.75},
	}
	for _, w := range ws {
		for dims := 2; dims <= 8; dims++ {
			if raceOn && dims != 6 && dims != 7 {
				continue
			}
			rng := rand.New(rand.NewPCG(uint64(dims), 12))
			rtt, _ := w.s.Matrix(rng)
			lms := SpreadLandmarks(rtt, dims+1)
			frac := withinTwoOrdinary(RunGNP(rtt, lms, dims, rng), rtt, lms)
			t.Logf("gnp %s, %d dimensions, %d landmarks: %.1f%% of ordinary pairs within a factor of 2", w.name, dims, dims+1, 100*frac)
			if (dims == 6 || dims == 7) && frac < w.want {
				t.Errorf("%s, %d dimensions: %.1f%% of ordinary pairs within a factor of 2, want at least %.0f%%", w.name, dims, 100*frac, 100*w.want)
			}
		}
	}
}

// withinTwoOrdinary is the share of pairs of hosts, neither a landmark,
// whose predicted round trip is within a factor 2 of the matrix's.
func withinTwoOrdinary(pos []Coord, rtt [][]float64, landmarks []int) float64 {
	in, all := 0, 0
	for i := range pos {
		for j := i + 1; j < len(pos); j++ {
			if slices.Contains(landmarks, i) || slices.Contains(landmarks, j) {
				continue
			}
			all++
			if p, m := Dist(pos[i], pos[j]), rtt[i][j]; p <= 2*m && m <= 2*p {
				in++
			}
		}
	}
	return float64(in) / float64(all)
}

// TestGNPWithinTwoCountsMisses: positions that all collapse to one point
// predict nothing within a factor 2, so the share above can fall.
func TestGNPWithinTwoCountsMisses(t *testing.T) {
	rtt, _ := Synth{N: 20, Spread: 150, Noise: 0.05}.Matrix(rand.New(rand.NewPCG(1, 1)))
	pos := make([]Coord, len(rtt))
	for i := range pos {
		pos[i] = Coord{Vec: []float64{0, 0}}
	}
	if f := withinTwoOrdinary(pos, rtt, []int{0, 1, 2}); f != 0 {
		t.Fatalf("collapsed positions: %.2f within a factor 2", f)
	}
}

func TestMinimize(t *testing.T) {
	// Rosenbrock's valley: minimum 0 at (1, 1).
	f := func(x []float64) float64 {
		a, b := 1-x[0], x[1]-x[0]*x[0]
		return a*a + 100*b*b
	}
	x, v := Minimize(f, []float64{-1.2, 1}, 0.5, 20000)
	if v > 1e-6 || x[0] < 0.99 || x[0] > 1.01 {
		t.Fatalf("Rosenbrock: %v at %v", v, x)
	}
}
