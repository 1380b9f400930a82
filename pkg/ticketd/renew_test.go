package ticketd

import (
	"testing"
	"time"
)

// TestRenew: a holder is told of a new lease end when it moved by a
// round's worth (one ALIVE), or when alone (the end moves with the clock)
// once a quarter of the lease is used; never for a move of a tick, and
// never so late that less than three quarters of the lease (less a quarter
// round) is left.
func TestRenew(t *testing.T) {
	round := 40 * time.Millisecond
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		sent, u time.Time
		want    bool
	}{
		{"unchanged", now.Add(120 * time.Millisecond), now.Add(120 * time.Millisecond), false},
		{"one ALIVE later", now.Add(80 * time.Millisecond), now.Add(120 * time.Millisecond), true},
		{"a tick of the clock, alone", now.Add(990 * time.Millisecond), now.Add(aloneLease), false},
		{"a quarter used, alone", now.Add(750 * time.Millisecond), now.Add(aloneLease), true},
		{"shorter", now.Add(200 * time.Millisecond), now.Add(120 * time.Millisecond), false},
	} {
		if got := renew(tc.sent, tc.u, now, round); got != tc.want {
			t.Errorf("%s: renew = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Ticking every quarter round while the end moves with the clock, the
	// holder's lease never falls below three quarters of the full one.
	sent := now.Add(aloneLease)
	for at := now; at.Before(now.Add(10 * time.Second)); at = at.Add(round / 4) {
		u := at.Add(aloneLease)
		if renew(sent, u, at, round) {
			sent = u
		}
		if left := sent.Sub(at); left < aloneLease*3/4-round/4 {
			t.Fatalf("at %v the holder's lease had %v left of %v", at.Sub(now), left, aloneLease)
		}
	}
}
