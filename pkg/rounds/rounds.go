package rounds

import (
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Schedule maps time to rounds.
type Schedule struct {
	Start  time.Time     // when round 1 begins
	Length time.Duration // the deadline of each round
}

// End is the deadline of round r.
func (s Schedule) End(r int) time.Time { return s.Start.Add(time.Duration(r) * s.Length) }

// Round is the round in progress at now by the deadlines alone (0 before
// Start).
func (s Schedule) Round(now time.Time) int {
	if now.Before(s.Start) || s.Length <= 0 {
		return 0
	}
	return int(now.Sub(s.Start)/s.Length) + 1
}

// Align returns the schedule a process joining late should follow when it
// sees a message of round r at now: round r is taken to have begun now.
func Align(now time.Time, r int, length time.Duration) Schedule {
	return Schedule{Start: now.Add(-time.Duration(r-1) * length), Length: length}
}

// Tracker follows which peers were heard in the current round.
type Tracker struct {
	peers     []node.ID
	heard     map[node.ID]bool
	suspected map[node.ID]bool
	round     int
}

// NewTracker tracks the given peers (the caller excluded).
func NewTracker(peers []node.ID) *Tracker {
	p := slices.Clone(peers)
	slices.Sort(p)
	return &Tracker{peers: p, heard: map[node.ID]bool{}, suspected: map[node.ID]bool{}}
}

// Begin starts round r: nobody is heard yet.
func (t *Tracker) Begin(r int) { t.round = r; clear(t.heard) }

// Round is the current round.
func (t *Tracker) Round() int { return t.round }

// Heard records a message of the current round from id. A suspected peer
// that turns out alive is trusted again.
func (t *Tracker) Heard(id node.ID) { t.heard[id] = true; delete(t.suspected, id) }

// Complete reports whether every non-suspected peer has been heard, so the
// round may end before its deadline.
func (t *Tracker) Complete() bool {
	for _, p := range t.peers {
		if !t.heard[p] && !t.suspected[p] {
			return false
		}
	}
	return true
}

// Expire is called when the round's deadline passes: every peer not heard
// becomes suspected. It returns the newly suspected peers.
func (t *Tracker) Expire() []node.ID {
	var out []node.ID
	for _, p := range t.peers {
		if !t.heard[p] && !t.suspected[p] {
			t.suspected[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Suspected reports whether id missed a deadline.
func (t *Tracker) Suspected(id node.ID) bool { return t.suspected[id] }

// Majority returns the value held by more than half of vals, or def when
// no value has a strict majority.
func Majority(vals []string, def string) string {
	counts := map[string]int{}
	for _, v := range vals {
		counts[v]++
		if 2*counts[v] > len(vals) {
			return v
		}
	}
	return def
}
