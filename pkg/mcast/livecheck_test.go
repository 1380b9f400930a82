package mcast

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// liveCheck judges a group run against the simulator's own record of who
// could hear whom, which no member's log holds.
//
// The rule (Nita-Rotaru's CS7610 notes, "A Membership Protocol": every
// process tracks the others by "I am alive" messages, and "if timeout
// occurs process that did not answer is considered crashed"; processes
// "join, leave and crash", and the partitions a group may survive are
// failures the same detector sees): a member leaves its live component
// only through a failure detector's suspicion or its own leave. So when
// member p installs a view that leaves out q, a member of p's previous
// view, one of these must hold:
//
//   - q never installed that view itself (its install was lost, or it
//     is still flushing the view before): p's view is then no common view
//     of theirs, and q's frames of its older view are no heartbeats in
//     p's, so the failure detector rightly suspects it;
//   - q no longer runs as that incarnation (it crashed, restarted, was
//     removed, or merged into another component under a new incarnation);
//   - q left or quit (its input ended, or it abandoned the group);
//   - between q and some member r of that previous view that goes on into
//     the new one (the change's leader is one: a leader never leaves
//     itself out, and whoever finishes its change takes the change as it
//     was), in either
//     direction, no heartbeat was handed over for longer than the suspect
//     timeout, in a silence that ended after the previous view was first
//     installed (or still lasts): the only way for r, the change's leader
//     among them, to suspect q (suspicion needs Suspect of silence at
//     least: the local health multiplier only stretches it). A heartbeat
//     is what the receiver takes as a sign of life: any frame of the
//     receiver's current view from the incarnation in it (not a join,
//     merge, quit, gone or install), and a receiver's install starts every
//     link into it afresh. Frames of an older view (a member slow to
//     install, over a slow link) are no heartbeats.
//
// Otherwise q was connected both ways to every member of the view for
// the whole interval since their last common view, never silent long
// enough to be suspected, and still left out: a member dropped from its
// live component. A log-only check cannot tell this from a member that
// acknowledged a view and was cut off before its commit arrived, which is
// why the silences come from the simulator. The check is lenient (any
// silence over Suspect on a link between q and a member that goes on
// excuses it), so it never fires on a legitimate suspicion, only on an
// exclusion with no silence at all.
type liveCheck struct {
	s       *sim.Sim[GMsg]
	suspect time.Duration
	start   time.Time
	last    map[[2]node.ID]time.Time // the last frame handed over, from → to
	gaps    map[[2]node.ID][]time.Time
	views   map[Member][]Member // each member's current view
	first   map[liveKey]time.Time
	prevKey map[Member]liveKey
	has     map[Member]map[liveKey]bool // the views each member installed
	// running: q still runs as this incarnation, in the group, with its
	// input open.
	running func(q Member) bool
	group   func(node.ID) *Group
}

type liveKey struct {
	view   uint64
	leader Member
}

func newLiveCheck(s *sim.Sim[GMsg], group func(node.ID) *Group, running func(Member) bool) *liveCheck {
	c := &liveCheck{s: s, suspect: GroupConfig{}.suspect(), start: s.Now(), last: map[[2]node.ID]time.Time{},
		gaps: map[[2]node.ID][]time.Time{}, views: map[Member][]Member{}, first: map[liveKey]time.Time{},
		prevKey: map[Member]liveKey{}, has: map[Member]map[liveKey]bool{}, running: running, group: group}
	s.Watch = c.watch
	return c
}

// watch records every silence over Suspect on a link: gaps holds the
// instants at which such a silence ended.
func (c *liveCheck) watch(n sim.Note) {
	if n.Kind != sim.NoteDeliver {
		return
	}
	g := c.group(n.To)
	if g == nil || !g.inView || g.leftChange != nil {
		return
	}
	m, err := (GCodec{}).Unmarshal(n.Type, n.Payload)
	if err != nil || m.View != g.view.ID {
		return
	}
	switch m.Type {
	case GJoin, GMerge, GQuit, GGone, GInstall:
		return
	}
	if i, ok := g.pos[n.From]; !ok || g.view.Members[i].Inc != m.Inc {
		return
	}
	c.heard([2]node.ID{n.From, n.To})
}

// heard records a heartbeat on link k now.
func (c *liveCheck) heard(k [2]node.ID) {
	now := c.s.Now()
	prev, ok := c.last[k]
	if !ok {
		prev = c.start
	}
	if now.Sub(prev) > c.suspect {
		c.gaps[k] = append(c.gaps[k], now)
	}
	c.last[k] = now
}

// silent reports whether the link a → b was silent over Suspect in a
// silence that ended after since, or still lasts.
func (c *liveCheck) silent(a, b node.ID, since time.Time) bool {
	k := [2]node.ID{a, b}
	last, ok := c.last[k]
	if !ok {
		last = c.start
	}
	if c.s.Now().Sub(last) > c.suspect {
		return true
	}
	gs := c.gaps[k]
	return len(gs) > 0 && gs[len(gs)-1].After(since)
}

// installed judges member p's install of a view of members.
func (c *liveCheck) installed(id uint64, p Member, members []Member) error {
	now := c.s.Now()
	key := liveKey{id, members[0]}
	if _, ok := c.first[key]; !ok {
		c.first[key] = now
	}
	if c.has[p] == nil {
		c.has[p] = map[liveKey]bool{}
	}
	c.has[p][key] = true
	defer func() {
		for _, q := range members {
			c.last[[2]node.ID{q.ID, p.ID}] = now // the install starts every link into p afresh
		}
	}()
	prev, had := c.views[p]
	prevKey := c.prevKey[p]
	c.views[p], c.prevKey[p] = members, key
	if !had {
		return nil
	}
	since := c.first[prevKey]
	for _, q := range prev {
		if q == p || slices.Contains(members, q) || !c.running(q) || !c.has[q][prevKey] {
			continue
		}
		excused := false
		for _, r := range members {
			if r != q && slices.Contains(prev, r) && (c.silent(q.ID, r.ID, since) || c.silent(r.ID, q.ID, since)) {
				excused = true
				break
			}
		}
		if !excused {
			return fmt.Errorf("live component: member %d/%d installed view %d %v without member %d/%d, which still runs, never left, and exchanged heartbeats at least every %v with every member of view %d %v that goes on, since that view began (nobody could suspect it)",
				p.ID, p.Inc, id, members, q.ID, q.Inc, c.suspect, prevKey.view, prev)
		}
	}
	return nil
}

// TestLiveCheckCatchesDropLive: the planted bug (a change that drops a
// silent member also drops the view's last member, though it answered)
// is caught by the live-component check, and only by it: the same runs
// without the check pass every other check (the member left out rejoins
// under a new incarnation, its messages past the cut resent, so every
// log still shows virtual synchrony).
func TestLiveCheckCatchesDropLive(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator sweep: run without -race")
	}
	const seeds, enough = 200, 3
	caught, runs := 0, 0
	var first error
	for seed := uint64(1); seed <= seeds && caught < enough; seed++ {
		sc := gscenario{seed: seed, total: TotalSequencer, bug: gbugDropLive}
		runs++
		_, _, _, err := sc.run()
		if err == nil {
			continue
		}
		if !strings.Contains(err.Error(), "live component") {
			t.Fatalf("seed %d: the planted bug caught by another check: %v", seed, err)
		}
		sc.noLive = true
		if _, _, _, err := sc.run(); err != nil {
			t.Fatalf("seed %d: without the live-component check the planted bug is still caught: %v", seed, err)
		}
		caught++
		first = cmp.Or(first, err)
	}
	if caught == 0 {
		t.Fatalf("planted bug (a live, connected member dropped at a change) never caught in %d runs", runs)
	}
	t.Logf("planted bug caught in %d of %d runs, by the live-component check only, e.g. %v", caught, runs, first)
}
