package ticketsim

import (
	"math"
	"testing"
)

// TestSpread: the seeds' spread a sweep point reports.
func TestSpread(t *testing.T) {
	for _, c := range []struct {
		xs          []float64
		lo, med, hi float64
		n           int
	}{
		{nil, 1, 1, 1, 0},
		{[]float64{0.5}, 0.5, 0.5, 0.5, 1},
		{[]float64{1, 0.2, 0.6}, 0.2, 0.6, 1, 3},
		{[]float64{0.9, 0.1, 0.3, 0.5}, 0.1, 0.4, 0.9, 4},
	} {
		lo, med, hi, n := spread(c.xs)
		if lo != c.lo || math.Abs(med-c.med) > 1e-12 || hi != c.hi || n != c.n {
			t.Errorf("spread(%v) = %v %v %v %d, want %v %v %v %d", c.xs, lo, med, hi, n, c.lo, c.med, c.hi, c.n)
		}
	}
}

// TestChernoff: (e/4)^{2·p_f·n}, the seed's §4.2 bound.
func TestChernoff(t *testing.T) {
	if got, want := Chernoff(0.05, 100), math.Pow(math.E/4, 10); math.Abs(got-want) > 1e-15 || got > 0.0211 || got < 0.0209 {
		t.Fatalf("Chernoff(0.05, 100) = %v, want %v", got, want)
	}
	if Chernoff(0, 100) != 1 {
		t.Fatal("no failures: the bound is 1")
	}
}

// TestSweepSpread: a sweep point's spread brackets its pooled
// availability and counts only seeds that judged an acquisition.
func TestSweepSpread(t *testing.T) {
	pts, err := Sweep(SimConfig{Processes: 60, Tickets: 20, K: 1, Rounds: 80, Seed: 1}, []float64{0.8}, []float64{0.03}, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := pts[0]
	t.Log(p.Line())
	if p.Judged < 1 || p.Judged > 4 || p.Min > p.Median || p.Median > p.Max || p.Availability < p.Min || p.Availability > p.Max {
		t.Fatalf("%+v", p)
	}
}
