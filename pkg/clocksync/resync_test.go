package clocksync

import (
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/clock"
)

func TestResyncInterval(t *testing.T) {
	for _, c := range []struct {
		skew time.Duration
		ppm  float64
		want time.Duration
	}{
		{time.Millisecond, 100, 5 * time.Second}, // 1 ms / (2 × 100 µs/s)
		{10 * time.Millisecond, 200, 25 * time.Second},
		{time.Millisecond, 0, time.Second}, // ρ = 500 ppm
	} {
		got, err := ResyncInterval(c.skew, c.ppm)
		if err != nil || got != c.want {
			t.Errorf("δ %v ρ %g ppm: %v %v, want %v", c.skew, c.ppm, got, err, c.want)
		}
	}
	for _, bad := range []time.Duration{0, -time.Second} {
		if _, err := ResyncInterval(bad, 100); err == nil {
			t.Errorf("δ %v accepted", bad)
		}
	}
	if _, err := ResyncInterval(time.Second, 2e6); err == nil {
		t.Error("ρ of 2e6 ppm accepted")
	}
}

// maxApart runs two clocks drifting at +ρ and −ρ from a true base for 20
// intervals; every interval each reads the true time (an ideal exchange)
// and sets itself to it. It returns the largest difference between them,
// sampled every interval/100.
func maxApart(ppm float64, every time.Duration) time.Duration {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fast := clock.Skewed{DriftPPM: ppm, Epoch: start}
	slow := clock.Skewed{DriftPPM: -ppm, Epoch: start}
	var worst time.Duration
	step := every / 100
	for b := start; b.Before(start.Add(20 * every)); b = b.Add(step) {
		if b.Sub(start)%every == 0 {
			fast.Epoch, slow.Epoch = b, b // resynchronised: offset 0 from here
		}
		d := fast.At(b).Sub(slow.At(b))
		worst = max(worst, d, -d)
	}
	return worst
}

// TestResyncKeepsClocksWithinSkew: two clocks drifting at ±ρ, resynchronised
// every δ/(2ρ), never differ by more than δ; resynchronised every 1.5 ×
// δ/(2ρ) they do, so the check can fail.
func TestResyncKeepsClocksWithinSkew(t *testing.T) {
	const ppm = 200
	skew := 2 * time.Millisecond
	every, err := ResyncInterval(skew, ppm)
	if err != nil {
		t.Fatal(err)
	}
	if got := maxApart(ppm, every); got > skew {
		t.Fatalf("resynchronised every %v: the clocks came %v apart, more than δ = %v", every, got, skew)
	} else {
		t.Logf("δ %v, ρ %d ppm: every %v, at most %v apart", skew, ppm, every, got)
	}
	if got := maxApart(ppm, every*3/2); got <= skew {
		t.Fatalf("resynchronised every %v: still within δ (%v): the check cannot fail", every*3/2, got)
	}
}

func TestSlewedResyncInterval(t *testing.T) {
	got, err := SlewedResyncInterval(20*time.Millisecond, 20000)
	if err != nil || got != 250*time.Millisecond {
		t.Fatalf("δ 20ms ρ 2%%: %v %v, want 250ms", got, err)
	}
}
