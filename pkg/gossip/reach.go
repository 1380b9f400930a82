package gossip

import (
	"fmt"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Reach measures what the ticket protocol asks of PrCast (Gidenstam et al.
// §2: "an event is delivered to all destinations with high
// probability", within a round of the protocol, §4): for each broadcast,
// the share of the live members that delivered it within a given time, and
// how long the last of them took.
type Reach struct {
	at   map[key]time.Time
	got  map[key]map[node.ID]time.Duration
	keys []key
}

// NewReach returns an empty Reach.
func NewReach() *Reach {
	return &Reach{at: map[key]time.Time{}, got: map[key]map[node.ID]time.Duration{}}
}

// Broadcast records that origin broadcast its seq-th event at t (its own
// delivery counts as reaching it).
func (r *Reach) Broadcast(t time.Time, origin node.ID, seq uint64) {
	k := key{origin, seq}
	r.at[k] = t
	r.got[k] = map[node.ID]time.Duration{origin: 0}
	r.keys = append(r.keys, k)
}

// Deliver records that id delivered ev at t.
func (r *Reach) Deliver(t time.Time, id node.ID, ev DeliverEvent) {
	k := key{ev.Origin, ev.Seq}
	if g, ok := r.got[k]; ok {
		if _, seen := g[id]; !seen {
			g[id] = t.Sub(r.at[k])
		}
	}
}

// ReachReport sums up a run.
type ReachReport struct {
	Events int
	// Full counts the events every live member delivered within the bound.
	Full int
	// Fraction is the share of (event, live member) pairs delivered within
	// the bound; Worst the smallest share one event reached.
	Fraction, Worst float64
	// Slowest is the longest any live member took to deliver an event it
	// delivered within the bound.
	Slowest time.Duration
	// Missed names an event that did not reach every live member.
	Missed string
}

// Report measures each broadcast against live (the members that did not
// crash; an event whose origin crashed is left out) and the bound.
func (r *Reach) Report(live []node.ID, bound time.Duration) ReachReport {
	rep := ReachReport{Worst: 1}
	alive := set(live)
	var pairs, within int
	for _, k := range r.keys {
		if !alive[k.origin] {
			continue
		}
		rep.Events++
		n := 0
		for _, id := range live {
			if d, ok := r.got[k][id]; ok && d <= bound {
				n++
				rep.Slowest = max(rep.Slowest, d)
			}
		}
		pairs += len(live)
		within += n
		if n == len(live) {
			rep.Full++
		} else if rep.Missed == "" {
			rep.Missed = fmt.Sprintf("%d/%d reached %d of %d live members within %v", k.origin, k.seq, n, len(live), bound)
		}
		rep.Worst = min(rep.Worst, float64(n)/float64(len(live)))
	}
	if pairs > 0 {
		rep.Fraction = float64(within) / float64(pairs)
	}
	return rep
}

// CheckViews checks the overlay that partial views make among the live
// members: every live member is in the view of some live member (else no
// push reaches it and no shuffle brings it news), and every live member's
// view holds a live member (else it can neither push nor pull).
func CheckViews(views map[node.ID][]ViewEntry, live []node.ID) error {
	in := map[node.ID]int{}
	isLive := set(live)
	for _, id := range live {
		alive := 0
		for _, e := range views[id] {
			if isLive[e.ID] {
				in[e.ID]++
				alive++
			}
		}
		if alive == 0 && len(live) > 1 {
			return fmt.Errorf("views: live member %d knows no live member (view %v)", id, views[id])
		}
	}
	for _, id := range live {
		if in[id] == 0 && len(live) > 1 {
			return fmt.Errorf("views: live member %d is in no live member's view", id)
		}
	}
	return nil
}

func set(ids []node.ID) map[node.ID]bool {
	s := make(map[node.ID]bool, len(ids))
	for _, id := range ids {
		s[id] = true
	}
	return s
}
