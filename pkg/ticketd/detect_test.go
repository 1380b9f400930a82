package ticketd

import (
	"testing"
	"time"
)

// TestDetectionTime: the failure-detection time docs/ticketd.md states
// for --round 250ms --max-kill-grace 300ms (7.08 s: nine rounds of
// stretched suspicion, six δ of exclusion requests, and tempFor(1) =
// (three stretched windows + a newcomer's grace + R + δ)·1.02 + R + the
// margin), and that every term moves it: a longer kill grace, round or k.
func TestDetectionTime(t *testing.T) {
	base := Config{K: 1, Round: 250 * time.Millisecond, KillGrace: 300 * time.Millisecond}
	R, delta := base.Round, base.Round/2
	margin := base.KillGrace + 90*time.Millisecond
	temp := time.Duration(float64(3*Stretch*R+3*R+R+delta)*1.02) + R + margin
	want := time.Duration(Stretch*3)*R + 6*delta + temp
	if got := DetectionTime(base); got != want || got.Round(10*time.Millisecond) != 7080*time.Millisecond {
		t.Fatalf("DetectionTime(round 250ms, kill grace 300ms) = %v, want %v (7.08 s)", got, want)
	}
	for name, c := range map[string]Config{
		"kill grace": {K: 1, Round: base.Round, KillGrace: 2 * base.KillGrace},
		"round":      {K: 1, Round: 2 * base.Round, KillGrace: base.KillGrace},
		"k":          {K: 2, Round: base.Round, KillGrace: base.KillGrace},
	} {
		if DetectionTime(c) <= DetectionTime(base) {
			t.Errorf("a larger %s does not lengthen the detection time: %v", name, DetectionTime(c))
		}
	}
}
