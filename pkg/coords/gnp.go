package coords

import (
	"math"
	"math/rand/v2"
	"slices"
)

// GNP places landmarks and nodes (Ng and Zhang 2002, as Tanenbaum ch. 6 states
// it): the landmarks first, fitted to their pairwise round trips, then
// each node against the landmarks alone. Heights are not used: GNP's
// space is plain Euclidean.

// FitLandmarks places L landmarks in dims dimensions so that their
// distances fit rtt (L×L, ms) in squared relative error. The first
// landmark sits at the origin; restarts from rng's random starts keep the
// best fit. The result is deterministic for a given rng.
func FitLandmarks(rtt [][]float64, dims int, rng *rand.Rand) []Coord {
	l := len(rtt)
	obj := func(x []float64) float64 {
		s := 0.0
		for i := 0; i < l; i++ {
			for j := i + 1; j < l; j++ {
				if d := rtt[i][j]; d > 0 {
					e := (norm(sub(x[i*dims:(i+1)*dims], x[j*dims:(j+1)*dims])) - d) / d
					s += e * e
				}
			}
		}
		return s
	}
	scale := 0.0
	for i := range rtt {
		for _, d := range rtt[i] {
			scale = max(scale, d)
		}
	}
	var best []float64
	bestV := math.Inf(1)
	for range 4 {
		x0 := make([]float64, l*dims)
		for i := range x0 {
			x0[i] = (rng.Float64() - 0.5) * scale
		}
		x, v := Minimize(obj, x0, scale/4, 20000*l)
		if v < bestV {
			best, bestV = x, v
		}
	}
	out := make([]Coord, l)
	for i := range out {
		out[i] = Coord{Vec: slices.Clone(best[i*dims : (i+1)*dims])}
	}
	return out
}

// Place puts a node in the landmarks' space from its round trips to them
// (rtt[i] to landmarks[i]; ≤ 0: not measured).
func Place(landmarks []Coord, rtt []float64, rng *rand.Rand) Coord {
	dims := len(landmarks[0].Vec)
	obj := func(x []float64) float64 {
		s := 0.0
		for i, lm := range landmarks {
			if d := rtt[i]; d > 0 {
				e := (norm(sub(x, lm.Vec)) - d) / d
				s += e * e
			}
		}
		return s
	}
	// Start at the nearest landmark, nudged.
	near, nd := 0, math.Inf(1)
	for i, d := range rtt {
		if d > 0 && d < nd {
			near, nd = i, d
		}
	}
	var best []float64
	bestV := math.Inf(1)
	for range 3 {
		x0 := slices.Clone(landmarks[near].Vec)
		for i := range x0 {
			x0[i] += (rng.Float64() - 0.5) * nd
		}
		x, v := Minimize(obj, x0, max(nd, 1), 4000*dims)
		if v < bestV {
			best, bestV = x, v
		}
	}
	return Coord{Vec: best}
}

// Minimize is Nelder and Mead's downhill simplex: it looks for a minimum
// of f from x0 with an initial simplex of the given step, for at most
// evals evaluations, and returns the best point and its value.
func Minimize(f func([]float64) float64, x0 []float64, step float64, evals int) ([]float64, float64) {
	n := len(x0)
	pts := make([][]float64, n+1)
	vals := make([]float64, n+1)
	for i := range pts {
		pts[i] = slices.Clone(x0)
		if i > 0 {
			pts[i][i-1] += step
		}
		vals[i] = f(pts[i])
	}
	used := n + 1
	idx := make([]int, n+1)
	for used < evals {
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int {
			switch {
			case vals[a] < vals[b]:
				return -1
			case vals[a] > vals[b]:
				return 1
			}
			return 0
		})
		best, worst, second := idx[0], idx[n], idx[n-1]
		if vals[worst]-vals[best] <= 1e-12*(math.Abs(vals[best])+1e-12) {
			break
		}
		c := make([]float64, n) // centroid of all but the worst
		for _, i := range idx[:n] {
			for k := range c {
				c[k] += pts[i][k] / float64(n)
			}
		}
		at := func(t float64) []float64 { // c + t(c − worst)
			p := make([]float64, n)
			for k := range p {
				p[k] = c[k] + t*(c[k]-pts[worst][k])
			}
			return p
		}
		r := at(1)
		fr := f(r)
		used++
		switch {
		case fr < vals[best]:
			e := at(2)
			fe := f(e)
			used++
			if fe < fr {
				pts[worst], vals[worst] = e, fe
			} else {
				pts[worst], vals[worst] = r, fr
			}
		case fr < vals[second]:
			pts[worst], vals[worst] = r, fr
		default:
			t := -0.5 // inside contraction
			if fr < vals[worst] {
				t = 0.5 // outside
			}
			k := at(t)
			fk := f(k)
			used++
			if fk < min(fr, vals[worst]) {
				pts[worst], vals[worst] = k, fk
				continue
			}
			for _, i := range idx[1:] { // shrink towards the best
				for j := range pts[i] {
					pts[i][j] = pts[best][j] + 0.5*(pts[i][j]-pts[best][j])
				}
				vals[i] = f(pts[i])
				used++
			}
		}
	}
	b := 0
	for i := range vals {
		if vals[i] < vals[b] {
			b = i
		}
	}
	return pts[b], vals[b]
}
