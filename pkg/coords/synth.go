package coords

import (
	"math"
	"math/rand/v2"
)

// Synth describes a synthetic latency matrix: N hosts at uniform points
// of a Spread × Spread plane (ms), each behind an access link of
// 1..MaxHeight ms (none when MaxHeight is 0: a plain plane), every round trip the distance plus both access links,
// times a symmetric lognormal-ish noise factor of deviation Noise; then a
// fraction Detours of the pairs take a path Detour times as long (routing
// detours: the triangle inequality no longer holds for them).
type Synth struct {
	N         int
	Spread    float64
	MaxHeight float64
	Noise     float64
	Detours   float64
	Detour    float64
}

// Matrix draws the round-trip matrix (ms; zero diagonal) and the true
// positions it came from.
func (s Synth) Matrix(rng *rand.Rand) ([][]float64, []Coord) {
	pos := make([]Coord, s.N)
	for i := range pos {
		pos[i] = Coord{Vec: []float64{rng.Float64() * s.Spread, rng.Float64() * s.Spread}, Height: 1 + rng.Float64()*max(s.MaxHeight-1, 0)}
		if s.MaxHeight <= 0 {
			pos[i].Height = 0
		}
	}
	m := make([][]float64, s.N)
	for i := range m {
		m[i] = make([]float64, s.N)
	}
	for i := range m {
		for j := i + 1; j < s.N; j++ {
			d := Dist(pos[i], pos[j]) * math.Exp(rng.NormFloat64()*s.Noise)
			if rng.Float64() < s.Detours {
				d *= s.Detour
			}
			m[i][j], m[j][i] = d, d
		}
	}
	return m, pos
}

// Sample is one measurement of the round trip from i to j: the matrix's
// value with a few percent of jitter (queues), never below it.
func Sample(rtt [][]float64, i, j int, rng *rand.Rand) float64 {
	return rtt[i][j] * (1 + math.Abs(rng.NormFloat64())*0.02)
}

// RunVivaldi runs Vivaldi over the matrix: each round every node samples
// one random other node. It returns the positions and, after each round,
// the median relative error over all pairs.
func RunVivaldi(rtt [][]float64, dims, rounds int, rng *rand.Rand) ([]Coord, []float64) {
	n := len(rtt)
	vs := make([]*Vivaldi, n)
	for i := range vs {
		vs[i] = NewVivaldi(dims, rng)
	}
	pos := func() []Coord {
		out := make([]Coord, n)
		for i, v := range vs {
			out[i] = v.Pos
		}
		return out
	}
	var medians []float64
	for range rounds {
		for i, v := range vs {
			j := rng.IntN(n - 1)
			if j >= i {
				j++
			}
			v.Update(Sample(rtt, i, j, rng), vs[j].Pos, vs[j].Err)
		}
		medians = append(medians, Quantile(Errors(pos(), rtt), 0.5))
	}
	return pos(), medians
}

// RunGNP places the first L hosts as landmarks (fitted to their pairwise
// round trips) and every other host against them.
func RunGNP(rtt [][]float64, landmarks []int, dims int, rng *rand.Rand) []Coord {
	lm := make([][]float64, len(landmarks))
	for a, i := range landmarks {
		lm[a] = make([]float64, len(landmarks))
		for b, j := range landmarks {
			if i != j {
				lm[a][b] = Sample(rtt, i, j, rng)
			}
		}
	}
	lpos := FitLandmarks(lm, dims, rng)
	out := make([]Coord, len(rtt))
	isLM := map[int]int{}
	for a, i := range landmarks {
		isLM[i] = a
	}
	for i := range rtt {
		if a, ok := isLM[i]; ok {
			out[i] = lpos[a]
			continue
		}
		d := make([]float64, len(landmarks))
		for a, j := range landmarks {
			d[a] = Sample(rtt, i, j, rng)
		}
		out[i] = Place(lpos, d, rng)
	}
	return out
}

// SpreadLandmarks picks k hosts far apart (greedy farthest point on the
// round trips, from host 0): GNP wants landmarks that see the space from
// different sides.
func SpreadLandmarks(rtt [][]float64, k int) []int {
	out := []int{0}
	for len(out) < min(k, len(rtt)) {
		best, bestD := -1, -1.0
		for i := range rtt {
			d := math.Inf(1)
			for _, l := range out {
				d = min(d, rtt[i][l])
			}
			if d > bestD && d > 0 {
				best, bestD = i, d
			}
		}
		if best < 0 {
			break
		}
		out = append(out, best)
	}
	return out
}
