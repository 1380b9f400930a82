package mutex

import (
	"time"

	"github.com/roundtable-go/roundtable/pkg/fd"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// down lists, in the order given, the members other than self that the
// failure detector t holds for dead at now: heard from and silent for
// longer than its bound since, or never heard although this daemon has
// listened for that long (since started; a daemon that just started takes
// no silence it has not waited for as a crash). Status reports it, so a
// member's `lockd status` need not wait for an answer that will not come.
func down(t *fd.Timeout, members []node.ID, self node.ID, started, now time.Time) []node.ID {
	out := []node.ID{}
	if started.IsZero() {
		return out
	}
	for _, id := range members {
		if id == self {
			continue
		}
		if d := t.Deadline(id); d.IsZero() && now.Sub(started) > t.Bound || !d.IsZero() && !now.Before(d) {
			out = append(out, id)
		}
	}
	return out
}
