package group

import (
	"testing"
	"time"
)

// TestTotemAsksOnlyLate: on a loss-free network whose frames take 1 to 3
// ms (so a holder's copy to a member can arrive after the token has gone
// on through the successor and reached it), the token asks for nothing
// already on its way: no data copy is resent. With the planted
// bugTotemAsksInFlight every position missing when the token comes is
// asked for, and the members that have them resend copies in flight.
func TestTotemAsksOnlyLate(t *testing.T) {
	for _, b := range []bug{0, bugTotemAsksInFlight} {
		f := floodFrames(t, 5, Config{Total: TotalTotem, bug: b}, load{interval: 2 * time.Millisecond, dur: time.Second, lag: 3 * time.Millisecond, minLag: time.Millisecond})
		t.Logf("bug %d: %d messages, %.0f copies resent", b, f.sent, f.resent*float64(f.sent))
		if b == 0 && f.resent > 0 {
			t.Errorf("%.3f copies resent per message on a loss-free network", f.resent)
		}
		if b != 0 && f.resent == 0 {
			t.Error("the planted bug resent nothing: the test does not reach a copy in flight")
		}
	}
}
