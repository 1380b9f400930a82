package clock

import (
	"fmt"
	"testing"
	"time"
)

func TestSkewedRoundTrip(t *testing.T) {
	epoch := time.Unix(1000, 0)
	for _, s := range []Skewed{
		{Offset: 250 * time.Millisecond, DriftPPM: 200, Epoch: epoch},
		{Offset: -500 * time.Millisecond, DriftPPM: -200, Epoch: epoch},
		{},
	} {
		for _, d := range []time.Duration{0, time.Second, time.Hour, -time.Minute} {
			base := epoch.Add(d)
			got := s.BaseOf(s.At(base))
			if diff := got.Sub(base); diff > time.Microsecond || diff < -time.Microsecond {
				t.Errorf("%+v: BaseOf(At(%v)) off by %v", s, d, diff)
			}
		}
	}
	s := Skewed{DriftPPM: 200, Epoch: epoch}
	if got := s.At(epoch.Add(time.Second)).Sub(epoch.Add(time.Second)); got != 200*time.Microsecond {
		t.Errorf("200 ppm over 1s gained %v, want 200µs", got)
	}
}

func TestManualNeverBackwards(t *testing.T) {
	m := NewManual(time.Unix(10, 0))
	m.Advance(-time.Second)
	m.Set(time.Unix(5, 0))
	if !m.Now().Equal(time.Unix(10, 0)) {
		t.Fatalf("manual clock moved backwards to %v", m.Now())
	}
	m.Advance(time.Second)
	if !m.Now().Equal(time.Unix(11, 0)) {
		t.Fatalf("Advance: got %v", m.Now())
	}
}

func ExampleSkewed() {
	base := NewManual(time.Unix(0, 0))
	fast := Skewed{Base: base, Offset: 100 * time.Millisecond, DriftPPM: 1000, Epoch: time.Unix(0, 0)}
	base.Advance(10 * time.Second)
	fmt.Println(fast.Now().Sub(base.Now())) // offset plus 10 ms of drift
	// Output: 110ms
}
