package mutex

import (
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/fd"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestDown: a member is down once the detector's bound has passed since it
// was last heard, or since this daemon started for one never heard; never
// before this daemon has listened that long, and never itself.
func TestDown(t *testing.T) {
	t0 := time.Unix(1000, 0)
	det := fd.NewTimeout(2 * time.Second)
	members := []node.ID{1, 2, 3, 4}
	det.Heard(2, t0.Add(time.Second))
	det.Heard(3, t0.Add(3*time.Second))
	for _, c := range []struct {
		at   time.Duration
		want []node.ID
	}{
		{0, []node.ID{}},
		{2 * time.Second, []node.ID{}},          // 4 never heard, but only 2 s of listening
		{2*time.Second + 1, []node.ID{4}},       // now it has listened for the bound
		{3*time.Second + 1, []node.ID{2, 4}},    // 2 silent for more than the bound
		{5 * time.Second, []node.ID{2, 4}},      // 3 last heard at 3 s: not yet
		{5*time.Second + 1, []node.ID{2, 3, 4}}, // and now
	} {
		if got := down(det, members, 1, t0, t0.Add(c.at)); !slices.Equal(got, c.want) {
			t.Errorf("at %v: down %v, want %v", c.at, got, c.want)
		}
	}
	if got := down(det, members, 1, time.Time{}, t0.Add(time.Hour)); len(got) != 0 {
		t.Errorf("before the daemon started: down %v", got)
	}
}
