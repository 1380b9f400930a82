package fd

import (
	"fmt"
	"testing"
	"time"
)

func TestTimeout(t *testing.T) {
	d := NewTimeout(100 * time.Millisecond)
	t0 := time.Unix(0, 0)
	if !d.Suspected(1, t0) {
		t.Fatal("never-heard peer must be suspected")
	}
	d.Heard(1, t0)
	if d.Suspected(1, t0.Add(100*time.Millisecond)) {
		t.Fatal("suspected exactly at the bound")
	}
	if !d.Suspected(1, t0.Add(101*time.Millisecond)) {
		t.Fatal("not suspected after the bound")
	}
	if !d.Suspected(1, d.Deadline(1)) {
		t.Fatal("Deadline is not the first suspected instant")
	}
	d.Heard(1, t0.Add(-time.Second)) // older news must not move the clock back
	if d.Suspected(1, t0.Add(50*time.Millisecond)) {
		t.Fatal("an older heartbeat reset the detector")
	}
}

func TestPhiGrowsWithSilence(t *testing.T) {
	p := NewPhiAccrual()
	t0 := time.Unix(0, 0)
	for i := 0; i < 50; i++ {
		p.Heard(7, t0.Add(time.Duration(i)*100*time.Millisecond))
	}
	last := t0.Add(49 * 100 * time.Millisecond)
	prev := -1.0
	for _, gap := range []time.Duration{50, 100, 130, 160, 200} {
		phi := p.Phi(7, last.Add(gap*time.Millisecond))
		if phi < prev {
			t.Fatalf("phi decreased: %v after %v", phi, prev)
		}
		prev = phi
	}
	if p.Suspected(7, last.Add(100*time.Millisecond), 8) {
		t.Fatal("suspected at the usual interval")
	}
	if !p.Suspected(7, last.Add(time.Second), 8) {
		t.Fatal("not suspected after 10 missed heartbeats")
	}
}

func ExampleTimeout() {
	d := NewTimeout(200 * time.Millisecond)
	t0 := time.Unix(0, 0)
	d.Heard(3, t0)
	fmt.Println(d.Suspected(3, t0.Add(150*time.Millisecond)), d.Suspected(3, t0.Add(250*time.Millisecond)))
	// Output: false true
}
