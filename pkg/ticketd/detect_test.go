package ticketd

import (
	"testing"
	"time"
)

// TestDetectionTime: the failure-detection times docs/ticketd.md states
// for --round 250ms --max-kill-grace 300ms: 7.47 s for a member whose
// range holds its own ticket only (nine rounds of stretched suspicion,
// six δ of exclusion requests, and tempFor(2) = (three stretched windows
// + a newcomer's grace + 2·(R + δ))·1.02 + R + the margin), 10.27 s for
// one whose range also held a free ticket (a chain of two: one stretched
// vouch and δ more, and R + δ for the second ticket); and that every term
// moves it: a longer kill grace, round or k.
func TestDetectionTime(t *testing.T) {
	base := Config{K: 1, Round: 250 * time.Millisecond, KillGrace: 300 * time.Millisecond}
	R, delta := base.Round, base.Round/2
	margin := base.KillGrace + 90*time.Millisecond
	vouch := 3 * Stretch * R
	temp := time.Duration(float64(vouch+3*R+2*(R+delta))*1.02) + R + margin
	want := time.Duration(Stretch*3)*R + 6*delta + temp
	if got := DetectionTime(base); got != want || got.Round(10*time.Millisecond) != 7470*time.Millisecond {
		t.Fatalf("DetectionTime(round 250ms, kill grace 300ms) = %v, want %v (7.47 s)", got, want)
	}
	if got := DetectionTimeFor(base, 1); got != want {
		t.Errorf("DetectionTimeFor(1 ticket) = %v, want DetectionTime's %v", got, want)
	}
	temp = time.Duration(float64(vouch+(vouch+delta)+3*R+3*(R+delta))*1.02) + R + margin
	want = time.Duration(Stretch*3)*R + 6*delta + temp
	if got := DetectionTimeFor(base, 2); got != want || got.Round(10*time.Millisecond) != 10270*time.Millisecond {
		t.Errorf("DetectionTimeFor(2 tickets) = %v, want %v (10.27 s)", got, want)
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
