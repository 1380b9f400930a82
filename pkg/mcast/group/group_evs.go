package group

import (
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Extended virtual synchrony (Config.EVS; Nita-Rotaru's CS7610 notes, "Extended
// virtual synchrony", and Moser, Amir, Melliar-Smith and Agarwal's EVS
// model behind Spread and TOTEM).
//
// Partitions. Without EVS a view change needs answers from a majority of
// the view, so only a primary component goes on. With EVS any set of
// members that hear each other installs its own view: the leader-based
// change of group.go runs unchanged inside each component, and a
// component's members move together from view to view as before (the
// flush, virtual synchrony, total order and safe delivery hold within each
// component). Two components may give their views the same number; a view
// is named by its number and its leader (Members[0], an incarnation), and
// a leader's views only grow in number (merges below keep it so), so that
// pair is unique (CheckViews keys views by it).
//
// Merges. The acting leader of each view sends MsgMerge, every Suspect, to
// every process it knows (every member of a view it was in, and its
// contacts) that is outside its view. A leader that hears MsgMerge from the
// leader of another component decides which way the merge goes: the
// component with the lower view number (equal numbers: the one whose
// leader has the higher ID) joins the other. The joining component runs
// one more view change, whose Next has no members and whose Into names
// the other leader: the flush delivers the same messages of the old view
// at every member that moves, and each announces its transitional
// configuration (MergeEvent: the members that move on together) and joins
// the other component as a new incarnation, its joins marked as merging.
// The other component's leader takes them in with its next change, whose
// members announce their own transitional configuration (MergeEvent
// without Into) before installing the merged view. The merged view's
// number is above every number the joining members had (their old view's
// number was not above the absorbing one's), so a leader's view numbers
// still only grow.
//
// A member that was in a view and is let into none for 4·Suspect (its
// component joined another that it cannot reach) installs a view of its
// own, one above its last, and merges from there.
//
// A component merges as a whole view: a change that would take it into
// another without members that did not answer installs the view of
// those that did, and the merge follows (leadChange). And a member does
// not answer a frame of a view it has left from a process outside its
// view with MsgGone (laggard): under EVS that process is in another
// component, not out of the group, and the two merge as above.
//
// The seed leaves open how components find each other and which way a
// merge goes; JGroups' MERGE protocols probe from coordinators in the
// same way, and the deterministic direction makes two leaders that probe
// each other at once agree without a round of their own.

// probe sends MsgMerge to the known processes outside the view (the acting
// leader, every Suspect).
func (g *Group) probe() {
	if !g.cfg.EVS || !g.inView || g.flushing || g.acting() != g.cfg.ID || g.now.Before(g.nextProbe) {
		return
	}
	g.nextProbe = g.now.Add(g.cfg.Suspect)
	for _, id := range slices.Sorted(func(yield func(node.ID) bool) {
		for id := range g.known {
			if !yield(id) {
				return
			}
		}
	}) {
		if _, in := g.pos[id]; !in {
			g.send(id, Msg{Type: MsgMerge, View: g.view.ID, Member: g.me})
		}
	}
}

// onMerge: the leader of another component probes us.
func (g *Group) onMerge(from node.ID, m Msg) {
	if !g.cfg.EVS || !g.inView || m.Member.ID != from {
		return
	}
	if _, in := g.pos[from]; in {
		// A member of our view: from before it (stale), or from a later
		// incarnation of its process (handle noted it: the one in our
		// view has ended and goes at the next change; its probes are
		// heard as another component's once it is out).
		return
	}
	g.known[from] = true
	if g.acting() != g.cfg.ID || g.mergeInto != node.None {
		return
	}
	if m.View > g.view.ID || m.View == g.view.ID && (from < g.cfg.ID || g.cfg.bug == bugMergeEitherWay) {
		// We join them (group_evs.go's rule): the change starts at the
		// next tick.
		g.mergeInto, g.mergeView = from, m.View
		g.stats["merges-out"]++
		return
	}
	// They join us: make sure they hear of us soon.
	if t, ok := g.lagAt[from]; !ok || g.now.Sub(t) >= g.cfg.Period {
		g.lagAt[from] = g.now
		g.send(from, Msg{Type: MsgMerge, View: g.view.ID, Member: g.me})
	}
}

// mergeOut: the install of a change that takes this component into
// another (c.Into). The flush is done; announce the transitional
// configuration and join the other component as a new incarnation.
func (g *Group) mergeOut(c *Change) {
	var moving []Member
	for _, m := range g.view.Members {
		if slices.Contains(c.Survivors, m.ID) {
			moving = append(moving, m)
		}
	}
	// The others may have missed the install: pass it on once.
	for _, id := range c.Survivors {
		if id != g.cfg.ID {
			g.send(id, Msg{Type: MsgInstall, View: g.view.ID, Change: c})
		}
	}
	view := g.view.ID
	g.contacts = slices.DeleteFunc(g.contacts, func(id node.ID) bool { return id == c.Into })
	g.contacts = append([]node.ID{c.Into}, g.contacts...)
	g.life++
	g.me.Inc = g.cfg.Inc + g.life
	g.inView, g.flushing, g.lead, g.future = false, false, nil, nil
	g.view = View{}
	g.nextJoin, g.outSince, g.merging = g.now, g.now, true
	g.events = append(g.events, MergeEvent{Event: "merge", View: view, Members: moving, Into: c.Into, Inc: g.me.Inc})
	g.stats["merged"]++
}

// mergeIn: before installing a view that takes in another component,
// announce this component's transitional configuration.
func (g *Group) mergeIn(c *Change) {
	var moving []Member
	for _, m := range g.view.Members {
		if slices.Contains(c.Next.Members, m) {
			moving = append(moving, m)
		}
	}
	g.events = append(g.events, MergeEvent{Event: "merge", View: g.view.ID, Members: moving})
}
