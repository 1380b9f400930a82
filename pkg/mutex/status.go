package mutex

import (
	"maps"
	"slices"
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

// MergeLocks joins the lock rows of several members (Status "locks" of
// Ricart–Agrawala, the token ring or voting, where each member reports only
// its own clients) into one row per name: the holder, client and token from
// the member whose client holds it, and every member's waiting clients,
// each member's in its own first-come order. The members come in the order
// the algorithm will serve them:
//
//   - ricart-agrawala: by their outstanding requests' (Lamport stamp, ID),
//     the order the seed grants them in; members with no request out yet
//     (still listening after a restart, or between two of their clients)
//     after those;
//   - token-ring: the order the token visits them, from the member after
//     the holder's (ring lists the members in ring order; with no holder
//     known, from the ring's first member);
//   - voting: by ID, as the algorithm promises no order (a refused attempt
//     retries after a random backoff).
//
// Names are sorted; Node and Stamp are cleared, as they describe one
// member's row.
func MergeLocks(algo Algo, ring []node.ID, rows []LockStatus) []LockStatus {
	byName := map[string][]LockStatus{}
	for _, r := range rows {
		byName[r.Name] = append(byName[r.Name], r)
	}
	out := []LockStatus{}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		rs := byName[name]
		merged := LockStatus{Name: name}
		for _, r := range rs {
			if r.Holder != node.None {
				merged.Holder, merged.Client, merged.Token = r.Holder, r.Client, r.Token
			}
		}
		rank := func(r LockStatus) []uint64 {
			switch algo {
			case RicartAgrawala:
				if r.Stamp == 0 {
					return []uint64{1, 0, uint64(r.Node)}
				}
				return []uint64{0, r.Stamp, uint64(r.Node)}
			case TokenRing:
				at, from := slices.Index(ring, r.Node), slices.Index(ring, merged.Holder)
				if at < 0 {
					return []uint64{1, uint64(r.Node)}
				}
				// Distance after the holder's member: the holder's own
				// later clients wait for the token's next visit.
				n := len(ring)
				return []uint64{0, uint64((at - from - 1 + 2*n) % n)}
			}
			return []uint64{uint64(r.Node)}
		}
		slices.SortStableFunc(rs, func(a, b LockStatus) int { return slices.Compare(rank(a), rank(b)) })
		for _, r := range rs {
			merged.Queue = append(merged.Queue, r.Queue...)
		}
		out = append(out, merged)
	}
	return out
}
