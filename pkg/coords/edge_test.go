package coords

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFitLandmarksMinimumCount: with the fewest landmarks GNP can use in
// m dimensions, m+1 (Tanenbaum ch. 6: "a node P needs k+1 landmarks to
// compute its own position in a k-dimensional space"), the landmarks'
// fit has no spare equations: every pairwise round trip is one of the
// m(m+1)/2 constraints that pin the simplex down, and the distances of a
// true simplex can be met exactly. So every fitted pair must match its
// round trip, and a fit that leaves any pair out (that pair's distance is
// then free) misses it. Points drawn at random in m dimensions, m = 2..5.
func TestFitLandmarksMinimumCount(t *testing.T) {
	worst, worstDims := 0.0, 0
	for dims := 2; dims <= 5; dims++ {
		for seed := uint64(1); seed <= 5; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(dims)))
			l := dims + 1
			pts := make([][]float64, l)
			for i := range pts {
				pts[i] = make([]float64, dims)
				for k := range pts[i] {
					pts[i][k] = rng.Float64() * 150
				}
			}
			rtt := make([][]float64, l)
			for i := range rtt {
				rtt[i] = make([]float64, l)
				for j := range rtt[i] {
					if i != j {
						rtt[i][j] = norm(sub(pts[i], pts[j]))
					}
				}
			}
			lms := FitLandmarks(rtt, dims, rng)
			for i := 0; i < l; i++ {
				for j := i + 1; j < l; j++ {
					e := math.Abs(Dist(lms[i], lms[j])-rtt[i][j]) / rtt[i][j]
					if e > worst {
						worst, worstDims = e, dims
					}
					if e > 0.02 {
						t.Errorf("%d dimensions, %d landmarks, seed %d: landmarks %d and %d fitted %.1f ms apart, measured %.1f ms (%.1f%% off)",
							dims, l, seed, i, j, Dist(lms[i], lms[j]), rtt[i][j], 100*e)
					}
				}
			}
		}
	}
	t.Logf("worst landmark pair at the minimum count: %.3f%% off (%d dimensions)", 100*worst, worstDims)
}

// TestVivaldiErrorWeightedBySample: Dabek et al., Figure 3, update the
// error estimate by the sample's weight, w = e_i / (e_i + e_j):
// e_i = e_s·c_e·w + e_i·(1 − c_e·w). A confident node (e_i = 0.1) that hears
// a sample half off (e_s = 0.5) from a node that knows nothing (e_j = 10)
// barely moves its estimate: w ≈ 0.01, so e_i becomes 0.101. The same
// sample from an equally confident node (w = 0.5) moves it by
// c_e·w·(e_s − e_i) = 0.05. Unweighted, both would move it by 0.1.
func TestVivaldiErrorWeightedBySample(t *testing.T) {
	for _, c := range []struct {
		remoteErr, want float64
	}{
		{10, 0.1 + DefaultCe*(0.1/10.1)*0.4},
		{0.1, 0.1 + DefaultCe*0.5*0.4},
	} {
		v := NewVivaldi(2, rand.New(rand.NewPCG(1, 1)))
		v.Pos = Coord{Vec: []float64{0, 0}, Height: minHeight}
		v.Err = 0.1
		// The remote sits 50 ms away by coordinates (heights included), the
		// sample says 100: e_s = 0.5.
		v.Update(100, Coord{Vec: []float64{50 - 2*minHeight, 0}, Height: minHeight}, c.remoteErr)
		if math.Abs(v.Err-c.want) > 1e-3 {
			t.Errorf("remote error %v: error estimate %.4f after the sample, want %.4f (Figure 3)", c.remoteErr, v.Err, c.want)
		}
	}
}

// TestDistHeightVectors: with height vectors (Dabek et al. §5.3) a round
// trip crosses both ends' access links, ‖x_i − x_j‖ + h_i + h_j, and so
// is the same both ways. Nodes with different heights show a distance
// that counts one height only.
func TestDistHeightVectors(t *testing.T) {
	a := Coord{Vec: []float64{0, 0}, Height: 3}
	b := Coord{Vec: []float64{30, 40}, Height: 7}
	for _, c := range [][2]Coord{{a, b}, {b, a}} {
		if d := Dist(c[0], c[1]); d != 60 {
			t.Errorf("Dist(%v, %v) = %v, want 50 + 3 + 7 = 60", c[0], c[1], d)
		}
	}
}

// TestQuantileNearestRank: the q-quantile of n sorted values is the
// ⌈q·n⌉-th (nearest rank), which the convergence checks and the reported
// medians read.
func TestQuantileNearestRank(t *testing.T) {
	xs := []float64{10, 2, 9, 4, 5, 6, 7, 8, 3, 1}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.1, 1}, {0.5, 5}, {0.9, 9}, {1, 10}} {
		if got := Quantile(xs, c.q); got != c.want {
			t.Errorf("Quantile(1..10, %v) = %v, want %v", c.q, got, c.want)
		}
	}
}
