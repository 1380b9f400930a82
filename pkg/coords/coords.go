// Package coords computes network coordinates: positions in a small
// Euclidean space (plus a height, the access link) whose distances
// predict round-trip times between hosts. Tanenbaum ch. 6 ("Geometric overlay
// networks") gives two ways, both here as pure code with no I/O:
//
//   - GNP (Ng and Zhang 2002): L landmarks measure their pairwise
//     latencies and are placed to fit them; every other node then places
//     itself by minimising the squared relative error of its predicted
//     distances to the landmarks, Σ ((d(b_i,P) − d̂(b_i,P)) / d(b_i,P))².
//     The minimiser is Nelder and Mead's downhill simplex (gnp.go).
//   - Vivaldi (Dabek, Cox, Kaashoek and Morris 2004): every node is a mass
//     on springs whose rest lengths are the measured round trips; each
//     sample moves the node along the spring by a step scaled by its
//     confidence relative to the other's (the adaptive timestep), and keeps
//     an error estimate of its own (vivaldi.go).
//
// Distances are round-trip times in milliseconds. A Coord's height models
// the access link every path to the node crosses (Dabek et al. §5.3):
// the distance between two coordinates is the Euclidean distance of their
// vectors plus both heights.
package coords

import (
	"math"
	"slices"
)

// Coord is a position: Vec in Dims dimensions, and a height ≥ 0.
type Coord struct {
	Vec    []float64 `json:"vec"`
	Height float64   `json:"height"`
}

// Dist is the predicted round trip between a and b.
func Dist(a, b Coord) float64 {
	return norm(sub(a.Vec, b.Vec)) + a.Height + b.Height
}

func sub(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// RelErr is |predicted − measured| / measured.
func RelErr(predicted, measured float64) float64 {
	return math.Abs(predicted-measured) / measured
}

// Quantile is the q-quantile (0..1) of xs (nearest rank).
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Errors are the relative errors of pos against the matrix rtt for every
// pair i < j with a positive measurement.
func Errors(pos []Coord, rtt [][]float64) []float64 {
	var out []float64
	for i := range pos {
		for j := i + 1; j < len(pos); j++ {
			if rtt[i][j] > 0 {
				out = append(out, RelErr(Dist(pos[i], pos[j]), rtt[i][j]))
			}
		}
	}
	return out
}
