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

func TestHealth(t *testing.T) {
	h := NewHealth(3, 25*time.Millisecond, time.Second)
	t0 := time.Unix(0, 0)
	if h.Late(t0, 25*time.Millisecond) || h.Score(t0) != 0 {
		t.Fatal("lateness within the slack counted")
	}
	if got := h.Scale(200*time.Millisecond, t0); got != 200*time.Millisecond {
		t.Fatalf("a healthy process stretched its timeout to %v", got)
	}
	for i := range 5 {
		if !h.Late(t0, 26*time.Millisecond) {
			t.Fatalf("lateness %d above the slack not counted", i)
		}
	}
	if h.Score(t0) != 3 {
		t.Fatalf("score %d, want the cap 3", h.Score(t0))
	}
	if got := h.Scale(200*time.Millisecond, t0); got != 800*time.Millisecond {
		t.Fatalf("score 3 stretched 200ms to %v, want 800ms", got)
	}
	// Decay: one point per second without trouble.
	if s := h.Score(t0.Add(999 * time.Millisecond)); s != 3 {
		t.Fatalf("score %d before a full decay period", s)
	}
	if s := h.Score(t0.Add(2500 * time.Millisecond)); s != 1 {
		t.Fatalf("score %d after 2.5 decay periods, want 1", s)
	}
	// New trouble restarts the decay clock from the time it happened.
	h.Trouble(t0.Add(2600 * time.Millisecond))
	if s := h.Score(t0.Add(3500 * time.Millisecond)); s != 2 {
		t.Fatalf("score %d 0.9 s after trouble, want 2", s)
	}
	if s := h.Score(t0.Add(10 * time.Second)); s != 0 {
		t.Fatalf("score %d long after the last trouble", s)
	}
	var off Health // the zero value is off
	off.Trouble(t0)
	if off.Late(t0, time.Hour); off.Score(t0) != 0 || off.Scale(time.Second, t0) != time.Second {
		t.Fatal("the zero Health stretched a timeout")
	}
}
