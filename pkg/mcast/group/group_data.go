package group

import (
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"maps"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Step implements node.Machine.
func (g *Group) Step(now time.Time, in node.Envelope[Msg]) error {
	g.now = now
	if in.From == g.cfg.ID {
		switch in.Msg.Type {
		case MsgSend:
			for _, it := range in.Msg.Items {
				if len(it.Payload) > mcast.MaxPayload {
					return fmt.Errorf("mcast: a message of %d bytes exceeds %d", len(it.Payload), mcast.MaxPayload)
				}
			}
			if g.ended {
				return fmt.Errorf("mcast: send after the end of input")
			}
			if g.unacked()+len(g.queue) >= g.window() {
				g.full = true
				return mcast.ErrFull
			}
			for _, it := range in.Msg.Items {
				g.queue = append(g.queue, it.Payload)
			}
			g.flushQueue()
			return nil
		case MsgEnd:
			g.ended = true
			g.tryLeave()
			return nil
		case MsgAbandon:
			// Nita-Rotaru's CS7610 notes have members fail or leave through a view change;
			// a member whose process must exit now (its reader stalled)
			// does neither: it says so, so that the rest need not wait
			// a suspicion timeout nor count it for a majority. Sent
			// twice: it will not be there to send it again.
			if g.done || g.quitBy != (time.Time{}) {
				return nil
			}
			g.quitBy = g.now.Add(4 * g.cfg.Suspect)
			g.tryQuit()
			return nil
		case MsgWritten:
			was := g.backlogged()
			g.written = max(g.written, in.Msg.Written)
			if was && !g.backlogged() && g.inView && !g.done {
				g.deliver()
				// What was refused meanwhile comes again a round trip
				// from now, not a Period.
				for _, id := range g.others() {
					g.askStatus(id)
				}
				g.checkReady()
			}
			return nil
		}
		return fmt.Errorf("mcast: %v is not a local request here", in.Msg.Type)
	}
	if g.done {
		if g.quitted {
			return nil // gone: it must not tell anyone they are out
		}
		// Tell a straggler of our last view that the group went on
		// without it (everyone else may have left too).
		if _, ok := g.pos[in.From]; ok && in.Msg.Type != MsgGone && in.Msg.View <= g.view.ID {
			if t, ok := g.lagAt[in.From]; !ok || now.Sub(t) >= g.cfg.Period {
				g.lagAt[in.From] = now
				if c := g.past[in.Msg.View]; c != nil && !g.cfg.EVS && g.cfg.bug != bugNoRequeue {
					// The change that ended its view: its cut (laggard).
					g.send(in.From, Msg{Type: MsgInstall, View: in.Msg.View, Change: c})
				} else {
					g.send(in.From, Msg{Type: MsgGone, View: g.view.ID + 1, Member: Member{in.From, in.Msg.Inc}})
				}
			}
		}
		return nil
	}
	g.handle(in.From, in.Msg)
	g.tryQuit() // a change this member answered may have ended
	return nil
}

// handle processes one frame from another process.
func (g *Group) handle(from node.ID, m Msg) {
	g.heardOf(from, m.Inc)
	if g.leftChange != nil {
		next := g.leftChange.Next.ID
		if m.Type == MsgInstall && m.Change != nil && m.Change.Next.ID == next {
			// Another member that left with us waits for our word.
			g.send(from, Msg{Type: MsgStatus, View: next})
		}
		if m.View >= next || m.Type == MsgInstall && m.Change != nil && m.Change.Next.ID == next {
			delete(g.unconfirmed, from)
			g.checkLinger()
		}
		return
	}
	switch m.Type {
	case MsgJoin:
		g.onJoin(from, m.Member, m.Reject)
		return
	case MsgMerge:
		g.onMerge(from, m)
		return
	case MsgQuit:
		if !g.inView || m.View > g.view.ID {
			break // a later view's: buffered below until we get there
		}
		if i, ok := g.pos[from]; ok && g.view.Members[i] == m.Member {
			if _, seen := g.quit[m.Member]; !seen {
				g.stats["quit"]++
			}
			// Left out of the count only if it promised nothing here.
			g.quit[m.Member] = g.quit[m.Member] || m.View < g.view.ID || m.Ballot == (Ballot{})
		}
		return
	case MsgGone:
		if m.Member.Inc != 0 && m.Member != g.me && g.cfg.bug != bugGoneAnyInc {
			// It answers a frame of another incarnation of this process
			// (a stale frame of an earlier one): not news of this one.
			g.stats["gone-stale"]++
			return
		}
		if g.inView && m.View > g.view.ID {
			if _, ok := g.pos[from]; ok {
				g.rejoin(g.view.ID, nil, CauseGone)
			}
		}
		return
	case MsgInstall:
		if m.Change != nil {
			g.onInstall(from, m.Change)
		}
		return
	}
	if !g.inView {
		return
	}
	if m.View > g.view.ID {
		// A later view: we are behind (the install is on its way) or out.
		if debugf != nil {
			debugf("%d: view %d buffers %v of view %d from %d: %+v", g.cfg.ID, g.view.ID, m.Type, m.View, from, m.Items)
		}
		if len(g.future) < 4096 {
			g.future = append(g.future, node.Envelope[Msg]{From: from, To: g.cfg.ID, Msg: m})
		}
		return
	}
	if m.View < g.view.ID {
		g.laggard(from, m.Inc, m.View)
		return
	}
	if m.Lead != (Member{}) && m.Lead != g.view.Members[0] && g.cfg.bug != bugViewByNumber {
		// Another view of the same number: another EVS component's, whose
		// sender this view lists (a joiner both took in and that
		// installed theirs; doc.go, "views numbered alike").
		g.stats["foreign"]++
		g.stats["foreign-view"]++
		return
	}
	i, ok := g.pos[from]
	if !ok || g.view.Members[i].Inc != m.Inc {
		g.stats["foreign"]++
		return
	}
	g.hear(i)
	switch m.Type {
	case MsgData:
		g.onData(from, i, m)
	case MsgToken, MsgOrder, MsgPrio, MsgFinal, MsgHoldCancel:
		if m.Type == MsgToken && len(m.Items) > 0 {
			// TOTEM's token with its holder's copies for this member
			// riding on it (tokenCarries): the copies first, as though
			// they had come in a frame of their own just ahead of it.
			view := g.view.ID
			g.onData(from, i, Msg{Type: MsgData, View: m.View, Inc: m.Inc, Lead: m.Lead, Items: m.Items})
			if !g.inView || g.view.ID != view {
				return // the copies completed a view change: the token was the old view's
			}
		}
		g.order.frame(from, i, m)
	case MsgStatus:
		g.peerFlushing(m.Ballot)
		wake := g.order.onStatus(from, i, m)
		if len(m.Recv) == len(g.view.Members) {
			g.gcRecv[i] = m.Recv
			if wake || g.cfg.Safe {
				g.deliver()
			}
			// A status from a member in a view change (its Ballot)
			// that asks is fetching the change's cut: everything it
			// lacks, from every sender, goes at once.
			g.retransmit(from, m.Recv, m.Ordered, m.Reject, m.Ballot != (Ballot{}), m.Stamps)
			g.collect()
			g.room()
		}
	case MsgLeave:
		if g.acting() == g.cfg.ID {
			if _, ok := g.pos[m.Member.ID]; ok {
				g.leaves[m.Member.ID] = true
			}
		} else {
			g.send(g.acting(), Msg{Type: MsgLeave, View: g.view.ID, Member: m.Member})
		}
	case MsgPropose:
		if g.promised.less(m.Ballot) || g.promised == m.Ballot {
			if g.lead != nil && g.lead.ballot.less(m.Ballot) {
				g.lead = nil
			}
			g.deferUntil = g.now.Add(g.cfg.Suspect)
			g.onPropose(from, m.Ballot)
		} else {
			g.send(from, Msg{Type: MsgAck, View: g.view.ID, Ballot: g.promised, Reject: true})
		}
	case MsgAck:
		g.maxN = max(g.maxN, m.Ballot.N)
		if l := g.lead; l != nil && m.Reject {
			if l.ballot.less(m.Ballot) {
				// The member promised a later attempt. Step back if its
				// leader is the one we would follow; otherwise try again
				// above it.
				g.lead = nil
				if m.Ballot.ID != g.cfg.ID && g.acting() == m.Ballot.ID {
					g.deferUntil = g.now.Add(g.cfg.Suspect)
				}
			}
			return
		}
		if l := g.lead; l != nil && l.change == nil {
			if m.Ballot == l.ballot && len(m.Recv) == len(g.view.Members) {
				l.acks[from] = m
				g.tryCommit()
			}
		}
	case MsgCommit:
		if m.Change == nil || len(m.Change.Cut) != len(g.view.Members) {
			return
		}
		if m.Ballot.less(g.promised) {
			g.send(from, Msg{Type: MsgAck, View: g.view.ID, Ballot: g.promised, Reject: true})
			return
		}
		g.onCommit(from, m.Ballot, m.Change)
	case MsgReady:
		if l := g.lead; l != nil && l.change != nil && m.Ballot == l.ballot {
			l.ready[from] = true
			g.tryInstall()
		}
	}
}

// isMember reports whether from is in the current view.
func (g *Group) isMember(from node.ID) bool {
	_, ok := g.pos[from]
	return ok
}

// debugf, when set (tests), sees the group protocol's decisions.
var debugf func(format string, args ...any)

// rememberChange keeps the changes that ended the last views this member
// was in (a bounded history), so that a member the group went on
// without, which may come back several views later, learns its cut.
func (g *Group) rememberChange(c *Change) {
	if g.past == nil {
		g.past = map[uint64]*Change{}
	}
	g.past[c.Next.ID-1] = c
	for v := range g.past {
		if v+changeHistory < c.Next.ID {
			delete(g.past, v)
		}
	}
}

// changeHistory bounds rememberChange: views.
const changeHistory = 64

// laggard answers a frame of an older view: its sender missed the
// install (send it again) or is no longer a member (tell it so).
func (g *Group) laggard(from node.ID, inc, view uint64) {
	if t, ok := g.lagAt[from]; ok && g.now.Sub(t) < g.cfg.Period {
		return
	}
	g.lagAt[from] = g.now
	if c := g.past[view]; c != nil && !g.cfg.EVS && (g.cfg.bug != bugNoRequeue || view+1 == g.view.ID) {
		// It is still in a view a change this member went through
		// ended, whether the change kept it or not: the install gives
		// it the cut, and a member left out sends its messages past the
		// cut again in its next incarnation (requeue) instead of leaving
		// a gap. (Under EVS another component may number a view alike:
		// no cut from here.)
		g.send(from, Msg{Type: MsgInstall, View: view, Change: c})
		return
	}
	if i, ok := g.pos[from]; ok && g.view.Members[i].Inc == inc && g.lastInst != nil {
		g.send(from, Msg{Type: MsgInstall, View: g.view.ID - 1, Change: g.lastInst})
		return
	}
	if _, ok := g.pos[from]; !ok && g.cfg.EVS && g.cfg.bug != bugEVSGone {
		// Extended virtual synchrony: this member's later view without
		// the sender's process does not mean that the group went on
		// without it, only that the two are in different components now (a
		// partition: each side installs a view of its own, and the
		// other side's may be this member alone). A MsgGone would make
		// the sender, and every member of its component, rejoin as new
		// incarnations (TestEVSHealGone: all four of the other side,
		// when the network heals as the member cut off installs its own
		// view) where the seed has the components merge with their
		// histories: "each subset continues observing the
		// (partitionable) Virtual Synchrony model separately. Upon
		// re-merging, the merged set will be virtually synchronized from
		// the merging membership change message" (Nita-Rotaru's CS7610
		// notes, "Partitions"). So no answer: the sender hears nothing
		// of its view from here, suspects this member and goes on in a
		// view of its own, and the leaders' probes merge the two
		// (group_evs.go). A frame of an earlier incarnation of a process
		// in this view is still answered (below): that incarnation has
		// ended, there is no component of it to merge.
		g.stats["evs-no-gone"]++
		return
	}
	if _, ok := g.pos[from]; !ok || g.view.Members[g.pos[from]].Inc != inc {
		// Named for the incarnation whose frame it answers: a later
		// incarnation of the same process, live in a view or joining,
		// must not take it for news of itself.
		g.send(from, Msg{Type: MsgGone, View: g.view.ID, Member: Member{from, inc}})
	}
}

// onJoin: a process asks to join (Nita-Rotaru's CS7610 notes: joins go to
// the leader); from: the process the frame came from; merging: it comes
// from another component (group_evs.go).
//
// The leader takes in only a joiner it hears directly (from is the
// joiner), and only while it does: a joiner it heard no join of for
// Suspect is dropped (staleJoins). The seed's leader-based protocol has
// every member exchange heartbeats with every other and the leader run
// each change: a member the leader cannot hear is suspected by it Suspect
// after the install and removed, joins again, and is taken in again
// through the same relay, a view change per cycle (a view per ~170 ms
// was seen while a network was half cut). A member that is asked by a
// joiner answers with the leader's name instead of relaying the join
// (the answer is a MsgJoin whose Member is the leader): a joiner that
// knew only that member (a single contact) then asks the leader itself,
// and one the leader cannot hear waits, outside the group, saying whom
// it waits for (Status: Leader and JoinVia), until the leader hears it.
// Admitting it through the relay would need every heartbeat, answer and
// install relayed too, and its silence would still be the relay's word.
// Not with EVS (group_evs.go), whose joins are passed on and taken as
// before: there a component that merges came in one member per change
// over lossy, slow links (TestSimGroups totem/evs seed 624 missed its
// merge deadline), and relaying only a merging component's joins broke
// seed 650; a rule that fits merges is left open.
func (g *Group) onJoin(from node.ID, m Member, merging bool) {
	if !g.inView && from != m.ID && m.ID != node.None && m.ID != g.cfg.ID {
		// A member we asked names its leader: ask the leader directly.
		if !slices.Contains(g.contacts, m.ID) {
			g.contacts = append(g.contacts, m.ID)
			g.nextJoin = g.now
		}
		if g.joinLeader != m.ID {
			g.stats["join-redirected"]++
		}
		g.joinLeader, g.joinVia = m.ID, from
		return
	}
	if !g.inView || m.ID == node.None {
		return
	}
	g.heardOf(m.ID, m.Inc)
	if i, ok := g.pos[m.ID]; ok && g.view.Members[i].Inc > m.Inc {
		// A late or duplicated join of an earlier incarnation: the view
		// holds a later one, which a change must not replace with it.
		return
	}
	if i, ok := g.pos[m.ID]; ok && g.view.Members[i] == m {
		// It is in the view already and missed the install.
		if g.lastInst != nil {
			g.send(m.ID, Msg{Type: MsgInstall, View: g.view.ID - 1, Change: g.lastInst})
		}
		return
	}
	if g.acting() == g.cfg.ID {
		if from != m.ID && !g.cfg.EVS && g.cfg.bug != bugRelayedJoin {
			g.stats["join-relayed"]++
			return
		}
		g.joins[m] = g.now
		if merging {
			g.mergeJoins[m] = true
		}
		return
	}
	if from != m.ID {
		return // relayed: only its leader may take it
	}
	if g.cfg.EVS || g.cfg.bug == bugRelayedJoin {
		// With EVS joins are passed on as before (see above).
		g.send(g.acting(), Msg{Type: MsgJoin, View: g.view.ID, Member: m, Reject: merging})
		return
	}
	// Name the acting leader to the joiner (see above).
	if i, ok := g.pos[g.acting()]; ok {
		if t, ok := g.lagAt[m.ID]; !ok || g.now.Sub(t) >= g.cfg.Period {
			g.lagAt[m.ID] = g.now
			g.send(m.ID, Msg{Type: MsgJoin, View: g.view.ID, Member: g.view.Members[i]})
		}
	}
}

// staleJoins drops the joiners the acting leader has heard no join of for
// Suspect (onJoin: a joiner sends one every Period; the leader takes in
// only those it hears).
func (g *Group) staleJoins() {
	for m, at := range g.joins {
		if g.now.Sub(at) > g.cfg.Suspect && !g.cfg.EVS && g.cfg.bug != bugRelayedJoin {
			delete(g.joins, m)
			delete(g.mergeJoins, m)
			g.stats["join-stale"]++
		}
	}
}

// onPropose is phase I at a member: stop sending and delivering, promise,
// and answer with what this member has and what change it accepted.
func (g *Group) onPropose(from node.ID, b Ballot) {
	g.promised = b
	g.startFlush()
	a := Msg{Type: MsgAck, View: g.view.ID, Ballot: b, Recv: slices.Clone(g.recv), Ordered: uint64(len(g.stamps)), Finals: g.finals()}
	if g.ackRecv == nil {
		g.ackRecv = slices.Clone(g.recv)
	}
	if g.accepted != nil {
		a.Change, a.Accepted = g.accepted, g.accBallot
	}
	if from == g.cfg.ID {
		a.Inc = g.me.Inc
		g.lead.acks[g.cfg.ID] = a
		return
	}
	g.send(from, a)
}

func (g *Group) startFlush() {
	if !g.flushing {
		g.flushing, g.flushSince = true, g.now
		if g.nextBeat.After(g.now.Add(g.cfg.Period)) {
			g.nextBeat = g.now.Add(g.cfg.Period) // beat: the full rate now
		}
	}
}

// onCommit is phase II at a member: accept the change, fetch what the cut
// asks for, and say so when everything is here.
func (g *Group) onCommit(from node.ID, b Ballot, c *Change) {
	if b.less(g.promised) {
		return
	}
	if c.Next.ID != g.view.ID+1 {
		g.stats["bad-commit"]++
		return
	}
	g.promised = b
	g.startFlush()
	g.accepted, g.accBallot = c, b
	g.readySent = Ballot{} // a repeated commit: our ready was lost
	if !covers(g.recv, uint64(len(g.stamps)), g.order.agreed(), c) {
		// Ask the survivors: whoever has what we lack sends it (and the
		// heartbeats go on asking).
		for _, id := range c.Survivors {
			if id != g.cfg.ID {
				g.askStatus(id)
			}
		}
		return
	}
	g.checkReady()
}

// checkReady tells the change's leader once this member has everything up
// to the accepted cut.
func (g *Group) checkReady() {
	if g.accepted == nil || g.readySent == g.accBallot || !covers(g.recv, uint64(len(g.stamps)), g.order.agreed(), g.accepted) {
		return
	}
	g.readySent = g.accBallot
	if l := g.lead; l != nil && l.ballot == g.accBallot {
		l.ready[g.cfg.ID] = true
		g.tryInstall()
		return
	}
	g.send(g.accBallot.ID, Msg{Type: MsgReady, View: g.view.ID, Ballot: g.accBallot})
}

// tryInstall ends phase II once every survivor that must be is ready.
func (g *Group) tryInstall() {
	l := g.lead
	n := 0
	for _, id := range l.need {
		if l.ready[id] {
			n++
		}
	}
	if n < len(l.need) {
		if g.cfg.bug != bugEarlyInstall || 2*n <= len(g.view.Members) {
			return
		}
	}
	c := l.change
	to := map[node.ID]bool{}
	for _, m := range c.Next.Members {
		to[m.ID] = true
	}
	for _, id := range c.Survivors {
		to[id] = true
	}
	for _, id := range slices.Sorted(func(yield func(node.ID) bool) {
		for id := range to {
			if !yield(id) {
				return
			}
		}
	}) {
		if id != g.cfg.ID {
			g.send(id, Msg{Type: MsgInstall, View: g.view.ID, Change: c})
		}
	}
	g.onInstall(g.cfg.ID, c)
}

// onInstall delivers the rest of the old view up to the cut and installs
// the next view (or leaves, or rejoins).
func (g *Group) onInstall(from node.ID, c *Change) {
	if debugf != nil {
		debugf("%d: install from %d in view %d (flushing %v accepted %v): %+v", g.cfg.ID, from, g.view.ID, g.flushing, g.accBallot, *c)
	}
	next := c.Next
	in := slices.Contains(next.Members, g.me)
	switch {
	case !g.inView:
		if in && !g.done {
			g.lastInst = c
			g.install(next)
		}
		return
	case next.ID <= g.view.ID:
		if _, ok := g.pos[from]; !ok && next.ID == g.view.ID {
			// A member that left and waits to hear that we installed.
			g.send(from, Msg{Type: MsgStatus, View: g.view.ID})
		}
		return
	case g.cfg.EVS && from != g.cfg.ID && !g.isMember(from):
		// Another component's view change (two components may number
		// their views alike): not ours.
		return
	case next.ID > g.view.ID+1 || len(c.Cut) != len(g.view.Members):
		// We missed whole views: the group went on without us.
		g.stats["missed-views"]++
		g.rejoin(g.view.ID, nil, CauseMissedViews)
		return
	}
	if !slices.Contains(c.Survivors, g.cfg.ID) {
		// Taken out without flushing: what we delivered in this view may
		// differ from the survivors; this incarnation ends here.
		g.rejoin(g.view.ID, c, CauseLeftOut)
		return
	}
	if !covers(g.recv, uint64(len(g.stamps)), g.order.agreed(), c) && g.cfg.bug != bugEarlyInstall {
		// A survivor the install did not wait for (a change taken over
		// from a failed leader waits only for those that answered it)
		// and that lacks part of the cut cannot move with the others:
		// this incarnation ends here.
		g.stats["install-unready"]++
		g.rejoin(g.view.ID, c, CauseNotReady)
		return
	}
	if c.Into == node.None || g.cfg.bug != bugMergeNoFlush {
		g.finishView(c)
	}
	g.lastInst = c
	g.rememberChange(c)
	if in {
		if c.Merged {
			g.mergeIn(c)
		}
		g.install(next)
		return
	}
	if g.ended {
		g.inView = false
		left := LeftEvent{Event: "left", View: next.ID}
		if len(next.Members) > 0 {
			left.Leader = &next.Members[0]
		}
		g.events = append(g.events, left)
		g.linger(c)
		return
	}
	if c.Into != node.None {
		g.mergeOut(c)
		return
	}
	g.rejoin(g.view.ID, c, CauseRemoved)
}

// linger: a member that has left stays until every survivor of the
// change and every member of the next view has confirmed the install (or
// Suspect has passed), sending it again each Period. When the leaving
// members led the change or were the last to hear of it, nobody else can
// tell the rest that the view was installed: the rest would wait,
// flushing, for ever (they may be too few to form a majority of the old
// view without the leavers).
func (g *Group) linger(c *Change) {
	g.leftChange, g.leftAt = c, g.now
	g.unconfirmed = map[node.ID]bool{}
	for _, m := range c.Next.Members {
		g.unconfirmed[m.ID] = true
	}
	for _, id := range c.Survivors {
		g.unconfirmed[id] = true
	}
	delete(g.unconfirmed, g.cfg.ID)
	g.nextResend = g.now.Add(g.cfg.Period)
	g.checkLinger()
}

// checkLinger ends the member once the install has been confirmed by all,
// or the wait is over.
func (g *Group) checkLinger() {
	if g.leftChange == nil || g.done {
		return
	}
	if len(g.unconfirmed) > 0 && g.now.Sub(g.leftAt) < g.cfg.Suspect && g.cfg.bug != bugNoLinger {
		if !g.now.Before(g.nextResend) {
			g.nextResend = g.now.Add(g.cfg.Period)
			for _, id := range slices.Sorted(maps.Keys(g.unconfirmed)) {
				g.send(id, Msg{Type: MsgInstall, View: g.leftChange.Next.ID - 1, Change: g.leftChange})
			}
		}
		return
	}
	g.done = true
	g.events = append(g.events, mcast.DoneEvent{Event: "done", Sent: g.stats["sent"]})
}

// finishView delivers what the cut says is delivered in this view and this
// member has not delivered yet: the stamped messages in stamp order, then
// the rest by sender and number (the same at every survivor).
func (g *Group) finishView(c *Change) {
	if g.cfg.Safe && g.undelivered(c.Cut) {
		// The transitional set (Nita-Rotaru's notes, "Transitional
		// Configuration"): the members that come from this view and will
		// be in the same next one, this member always included.
		var ms []Member
		for i, m := range g.view.Members {
			switch {
			case g.cfg.bug == bugTransWholeView:
				ms = append(ms, m)
			case g.cfg.bug == bugTransLocal && m != g.me && g.suspected(i):
			case m == g.me || slices.Contains(c.Survivors, m.ID) && (len(c.Next.Members) == 0 || slices.Contains(c.Next.Members, m)):
				// (No next members: the component merges into another,
				// all its survivors together, extended virtual synchrony.)
				ms = append(ms, m)
			}
		}
		g.events = append(g.events, TransitionalEvent{Event: "transitional", View: g.view.ID, Members: ms})
	}
	g.order.finish(c)
}

// undelivered reports whether some message up to cut is not delivered
// here yet.
func (g *Group) undelivered(cut []uint64) bool {
	for j := range g.view.Members {
		done := g.deliv[j] // delivered in each sender's order
		if g.order.stamping() {
			done = g.delivered.upto[j] // upto+1 is not delivered (deliveredSet)
		}
		if done < min(cut[j], g.recv[j]) {
			return true
		}
	}
	return false
}

// receive stores one data item of the current view; false for a copy of
// one already here.
func (g *Group) receive(it mcast.Item) bool {
	j, ok := g.pos[it.Sender]
	if !ok || it.Sender == g.cfg.ID {
		return false
	}
	if it.Seq <= g.recv[j] || g.above[j][it.Seq] {
		g.stats["duplicates"]++
		return false
	}
	g.store[j][it.Seq] = it.Payload
	g.order.stored(j, it)
	if debugf != nil {
		debugf("%d: view %d store %d/%d %q", g.cfg.ID, g.view.ID, it.Sender, it.Seq, it.Payload)
	}
	if it.Seq != g.recv[j]+1 {
		g.above[j][it.Seq] = true
		g.nak[it.Sender] = max(g.nak[it.Sender], it.Seq)
		return true
	}
	old := g.recv[j]
	g.recv[j]++
	for g.above[j][g.recv[j]+1] {
		delete(g.above[j], g.recv[j]+1)
		g.recv[j]++
	}
	g.order.received(j, old+1, g.recv[j])
	return true
}

// deliver delivers what the order allows (nothing while a view change is
// under way: the install delivers the rest up to the cut).
func (g *Group) deliver() {
	if g.flushing && g.cfg.bug != bugFlushDeliver {
		return
	}
	g.order.deliver()
}

// safe reports whether message q of member j may be delivered: always,
// unless Safe, and then once every other member's last status shows it
// received (TOTEM's aru, Nita-Rotaru's CS7610 notes).
func (g *Group) safe(j int, q uint64) bool {
	return !g.cfg.Safe || g.order.safe(j, q)
}

// heldByAll: every other member's last status shows message q of member
// j received (safe delivery's acknowledgements).
func (g *Group) heldByAll(j int, q uint64) bool {
	for i, m := range g.view.Members {
		if m.ID == g.cfg.ID || g.cfg.bug == bugSafeSkipLast && i == len(g.view.Members)-1 {
			continue
		}
		if r := g.gcRecv[i]; r == nil || r[j] < q {
			return false
		}
	}
	return true
}

func (g *Group) deliverOne(j int, q uint64) {
	m := g.view.Members[j]
	if !g.order.stamping() {
		g.deliv[j] = q
	} else {
		g.delivered.add(j, q)
	}
	g.stats["delivered"]++
	g.emitted += mcast.Cost(g.store[j][q])
	g.events = append(g.events, DeliverEvent{Event: "deliver", View: g.view.ID, Sender: m.ID, Inc: m.Inc, Seq: q, Payload: g.store[j][q]})
}

// backlogged: the runner has not written out Backlog's worth of what it
// was handed.
func (g *Group) backlogged() bool {
	return g.cfg.Backlog > 0 && g.emitted-g.written >= uint64(g.cfg.Backlog)
}

// flushQueue sends what the application queued, when a view allows it.
func (g *Group) flushQueue() {
	if !g.inView || g.flushing || len(g.queue) == 0 {
		return
	}
	if !g.open {
		if len(g.view.Members) < g.cfg.StartWith {
			return
		}
		g.open = true
	}
	if !g.order.maySend() {
		g.order.waiting() // TOTEM: only the token's holder multicasts
		return
	}
	me := g.pos[g.cfg.ID]
	var items []mcast.Item
	for _, p := range g.queue {
		g.seq++
		g.store[me][g.seq] = p
		g.recv[me] = g.seq
		g.stats["sent"]++
		g.events = append(g.events, SendEvent{Event: "send", View: g.view.ID, Inc: g.me.Inc, Seq: g.seq, Payload: p})
		it := mcast.Item{Sender: g.cfg.ID, Seq: g.seq, Payload: p}
		g.order.onSend(me, &it)
		items = append(items, it)
	}
	g.queue = nil
	g.broadcast(items)
	g.order.sent()
	g.deliver()
}

// advanceStamps moves positions that came early into the order once the
// gap before them is filled.
func (g *Group) advanceStamps() {
	for {
		s, ok := g.stampAt[uint64(len(g.stamps))+1]
		if !ok {
			return
		}
		delete(g.stampAt, uint64(len(g.stamps))+1)
		g.stamps = append(g.stamps, s)
	}
}

// onData takes in a frame of multicast messages from member i of the
// view: a MsgData, or the copies riding on TOTEM's token.
func (g *Group) onData(from node.ID, i int, m Msg) {
	if len(m.Prios) > 0 {
		g.order.rode(from, i, m.Prios) // even when the data is refused
	}
	if g.backlogged() && !g.flushing {
		// Flow control: the reader is behind. Nothing stored is
		// nothing acknowledged; it comes again later.
		g.stats["refused"] += uint64(len(m.Items))
		return
	}
	fresh := false
	for _, it := range m.Items {
		fresh = g.receive(it) || fresh
	}
	if fresh && g.order.ackData() && !g.flushing {
		// Tanenbaum ch. 6: the receiver acknowledges to everyone (one
		// acknowledgement per batch of new messages, group_batch.go);
		// safe delivery waits for everyone's acknowledgement too,
		// except TOTEM's, where the token's aru says it
		// (Nita-Rotaru's CS7610 notes).
		g.batch.ack = true
	}
	if g.order.ctrlOnData() || g.batch.ack {
		g.ctrl()
	}
	if top, ok := g.nak[from]; ok {
		delete(g.nak, from)
		g.askGap(from, top)
	}
	g.deliver()
	g.checkReady() // last: it may install the next view
}

func (g *Group) broadcast(items []mcast.Item) {
	for len(items) > 0 {
		n, size := 0, 0
		for n < len(items) && n < maxItems {
			if n > 0 && size+len(items[n].Payload)+16 > budget {
				break
			}
			size += len(items[n].Payload) + 16
			n++
		}
		to := g.others()
		rides := g.order.ride(size, to)
		for k, id := range to {
			m := Msg{Type: MsgData, View: g.view.ID, Items: items[:n]}
			if rides != nil {
				m.Prios = rides[k]
			}
			g.send(id, m)
		}
		items = items[n:]
	}
}

// heldSnap is what a member held at one of its heartbeats.
type heldSnap struct {
	at      time.Time
	recv    []uint64
	ordered uint64
	finals  []uint64 // ISIS
}

// remember notes, at each heartbeat, what this member holds.
func (g *Group) remember() {
	g.held = append(g.held, heldSnap{at: g.now, recv: slices.Clone(g.recv), ordered: uint64(len(g.stamps)), finals: g.finals()})
	if len(g.held) > 3 {
		g.held = slices.Delete(g.held, 0, len(g.held)-3)
	}
}

// askGap asks a sender for its messages missing below top, the highest
// of them held here (a gap: Tanenbaum and van Steen ch. 8, "Reliable
// multicasting": a receiver that sees a sequence number missing asks
// its sender for it; the seed leaves open when and for what). The ask
// names the messages missing (Msg.Stamps, at most maxAsk), and asks for
// one again only Period/2 after it last did: on a link that reorders,
// every frame that overtakes another shows a gap, and asking on each for
// everything lacked, from every sender, resent 370 copies per message in
// a 9-member flood over 1–25 ms links in the simulator
// (TestReorderResendsLittle). A gap that stays is asked for again by
// the next frame from that sender after Period/2, or repaired by the
// heartbeats within two and a half Periods.
func (g *Group) askGap(from node.ID, top uint64) {
	if g.cfg.bug == bugAskResendsAll {
		g.askStatus(from)
		return
	}
	j, ok := g.pos[from]
	if !ok {
		return
	}
	a := g.asked[from]
	again := g.now.Sub(a.at) >= g.cfg.Period/2
	var lacks []Stamp
	for q := g.recv[j] + 1; q < top && len(lacks) < maxAsk; q++ {
		if !g.above[j][q] && (again || q > a.upto) {
			lacks = append(lacks, Stamp{from, q})
		}
	}
	if len(lacks) == 0 {
		g.stats["ask-held"]++
		return
	}
	if again {
		a.at = g.now
	}
	a.upto = max(a.upto, lacks[len(lacks)-1].Seq)
	g.asked[from] = a
	g.status(from, true, lacks)
}

// maxAsk bounds the messages one ask names.
const maxAsk = 256

// askPositions is the list of an ask for positions only (a gap in the
// sequencer's stamps): it names none of its addressee's messages, only
// one of the asker's own (the codec takes no empty stamp).
func (g *Group) askPositions() []Stamp { return []Stamp{{Sender: g.cfg.ID, Seq: 1}} }

// asked is what this member last asked a sender for (askGap).
type asked struct {
	upto uint64    // the highest message asked for
	at   time.Time // when every missing one was last asked for
}

// heldBefore is what this member held at its last heartbeat at least half
// a Period ago (nil: none yet). A status that shows a message missing
// which this member held then shows a loss; one it received since may
// still be on its way to the status's sender, as a status may cross the
// data it asks for, and is not sent again yet: sending every message a
// status shows missing resent a tenth to most of all copies on a
// loss-free network. A loss is repaired within two and a half Periods
// that way, or within a round trip when its receiver asks (askStatus: it
// saw a gap).
func (g *Group) heldBefore() *heldSnap {
	for i := len(g.held) - 1; i >= 0; i-- {
		if g.now.Sub(g.held[i].at) >= g.cfg.Period/2 {
			return &g.held[i]
		}
	}
	return nil
}

// retransmit sends a member what its status says it lacks: messages of
// any sender (relaying a failed sender's) and stamps. A status that asks
// outside a view change (neither member flushing; cut: the asker is)
// gets this member's own messages only (below). Unless the status
// asks (or a view change is under way), only what this member held half
// a Period ago goes (heldBefore), and where statuses are also
// acknowledgements (ackData: Lamport's order and safe delivery send one
// per batch, ctrlBatch apart) at most once per Period to one member, the
// heartbeats' rate: each would otherwise resend what a member that lags
// by more than half a Period has not yet read, a frame per status from
// each of the n−1 others; in a 9-member Lamport flood on loopback that
// storm, not the order, set the rate. With EVS too: changing the repair
// timing there once exposed deliveries across two components that
// number views alike, while frames named their view by number only;
// they name its leader now, and handle drops another view's (doc.go,
// "views numbered alike").
func (g *Group) retransmit(to node.ID, recv []uint64, ordered uint64, ask, cut bool, lacks []Stamp) {
	top, have := g.recv, uint64(len(g.stamps))
	if ask && !g.flushing && !cut && g.cfg.bug != bugAskResendsAll {
		// Own messages only: for a gap (askGap) the ones it names, else
		// (a reader caught up, positions missing) every one the asker
		// lacks. Every other sender's messages the asker lacks are on their way
		// from their sender, or come with the heartbeats' retransmission
		// (heldBefore), as a relayed sender's do. Answering an ask with
		// everything lacked, from every sender, on a link that reorders
		// resent what was on its way at every frame that overtook
		// another (askGap).
		g.resendOwn(to, recv, lacks)
		g.resendStamps(to, ordered, have)
		return
	}
	if !ask && !g.flushing {
		if t, ok := g.resentAt[to]; ok && g.now.Sub(t) < g.cfg.Period && g.order.ackData() && g.cfg.bug != bugResendEach {
			return
		}
		h := g.heldBefore()
		if h == nil {
			return
		}
		if g.resentAt == nil {
			g.resentAt = map[node.ID]time.Time{}
		}
		g.resentAt[to] = g.now
		top, have = h.recv, min(have, h.ordered)
	}
	var b resendBatch
	for j := range g.view.Members {
		for q := recv[j] + 1; q <= min(g.recv[j], top[j]) && !b.full(); q++ {
			if !b.add(g, j, q) {
				break
			}
		}
	}
	g.sendBatch(to, b)
	g.resendStamps(to, ordered, have)
}

// resendBatch gathers the messages of one retransmitted frame: the first
// always goes (a message near MaxPayload is over budget alone, and fits
// a frame alone), each later one while the frame stays within budget.
type resendBatch struct {
	items []mcast.Item
	size  int
}

// add puts in sender j's message q if this member holds it; false when
// it is not held or the frame has no room for it.
func (b *resendBatch) add(g *Group, j int, q uint64) bool {
	p, ok := g.store[j][q]
	if !ok || len(b.items) > 0 && b.size+len(p)+16 > budget {
		return false
	}
	id := g.view.Members[j].ID
	b.items = append(b.items, mcast.Item{Sender: id, Seq: q, TS: g.ts[Stamp{id, q}], Payload: p})
	b.size += len(p) + 16
	return true
}

func (b *resendBatch) full() bool { return b.size >= budget }

// sendBatch sends what a batch gathered, if anything.
func (g *Group) sendBatch(to node.ID, b resendBatch) {
	if len(b.items) > 0 {
		g.stats["retransmitted"] += uint64(len(b.items))
		g.send(to, Msg{Type: MsgData, View: g.view.ID, Items: b.items})
	}
}

// resendStamps sends a member the positions it lacks (from ordered on).
func (g *Group) resendStamps(to node.ID, ordered, have uint64) {
	if ordered < have {
		end := min(have, ordered+maxStamps)
		g.send(to, Msg{Type: MsgOrder, View: g.view.ID, Start: ordered + 1, Stamps: slices.Clone(g.stamps[ordered:end])})
	}
}

// resendOwn answers an ask with this member's own messages: those lacks
// names (a gap, askGap), or without a list every one after recv.
func (g *Group) resendOwn(to node.ID, recv []uint64, lacks []Stamp) {
	me := g.pos[g.cfg.ID]
	var b resendBatch
	if len(lacks) > 0 {
		for _, st := range lacks {
			if st.Sender != g.cfg.ID || st.Seq <= recv[me] || st.Seq > g.recv[me] {
				continue
			}
			if _, held := g.store[me][st.Seq]; held && !b.add(g, me, st.Seq) {
				break
			}
		}
	} else {
		for q := recv[me] + 1; q <= g.recv[me] && b.add(g, me, q); q++ {
		}
	}
	g.sendBatch(to, b)
}

// collect forgets messages every view member has and this member has
// delivered: each sender's from its watermark (gcLow) up to the first
// that is not, so a status costs what it frees, not a walk of the store
// (at nine members in a flood the walk took half a member's time).
// Every order delivers a sender's messages in their order, so what is
// collected is a prefix of them.
func (g *Group) collect() {
	for j, m := range g.view.Members {
		low := g.recv[j]
		for i := range g.view.Members {
			if g.view.Members[i].ID == g.cfg.ID {
				continue
			}
			if g.gcRecv[i] == nil {
				return
			}
			low = min(low, g.gcRecv[i][j])
		}
		for q := g.gcLow[j] + 1; q <= low; q++ {
			if !(!g.order.stamping() && q <= g.deliv[j] || g.delivered.has(j, q)) {
				break
			}
			delete(g.store[j], q)
			delete(g.ts, Stamp{m.ID, q})
			g.gcLow[j] = q
		}
	}
}

// unacked is how many of this member's messages of the view some member
// has not acknowledged.
func (g *Group) unacked() int {
	if !g.inView {
		return 0
	}
	me := g.pos[g.cfg.ID]
	low := g.seq
	for i, r := range g.gcRecv {
		if i == me {
			continue
		}
		if r == nil {
			return int(g.seq)
		}
		low = min(low, r[me])
	}
	return int(g.seq - low)
}

// window is this member's share of what one receiver may have in flight:
// Window up to three members, and past three a share of 2·Window split
// among the other members, so that what floods into one member (every
// other member's window) stays what it is at three members instead of
// growing with n (as TOTEM's window_size bounds the messages of a whole
// token rotation, not of each member). A fixed per-sender window let
// eight senders of 4,096 overflow a loaded member's socket buffer: it
// fell seconds behind, the group took it out of the view, and it missed
// what the others delivered meanwhile.
func (g *Group) window() int {
	n := len(g.view.Members)
	if n <= 3 || g.cfg.bug == bugFixedWindow {
		return g.cfg.Window
	}
	return max(2*g.cfg.Window/(n-1), 64)
}

// room tells a refused sender when half the window is free again.
func (g *Group) room() {
	if g.full && g.unacked()+len(g.queue) < g.window()/2 {
		g.full = false
		g.events = append(g.events, mcast.RoomEvent{Event: "room"})
	}
}

// tryQuit quits (MsgAbandon) once no change this member answered is under
// way: a quitter that promised nothing in its view is left out of the
// majority's count, so the rest go on even when it was half the view.
// Past quitBy it quits anyway (it is then counted like a crashed member).
func (g *Group) tryQuit() {
	if g.quitBy == (time.Time{}) || g.done {
		return
	}
	if g.inView && g.leftChange == nil && g.promised != (Ballot{}) && g.now.Before(g.quitBy) {
		return
	}
	if g.inView && g.leftChange == nil {
		for range 2 {
			for _, id := range g.others() {
				g.send(id, Msg{Type: MsgQuit, View: g.view.ID, Ballot: g.promised, Member: g.me})
			}
		}
	}
	g.done, g.quitted, g.inView = true, true, false
	g.events = append(g.events, mcast.DoneEvent{Event: "done", Sent: g.stats["sent"]})
}

// tryLeave: once the input has ended and everything queued is sent, ask
// the leader to take this member out (alone, just stop).
func (g *Group) tryLeave() {
	if !g.ended || !g.inView || g.done || len(g.queue) > 0 {
		return
	}
	if len(g.view.Members) == 1 && !g.flushing {
		g.finishView(&Change{Cut: slices.Clone(g.recv), OrderCut: uint64(len(g.stamps)), Survivors: []node.ID{g.cfg.ID}})
		g.done, g.inView = true, false
		g.events = append(g.events, LeftEvent{Event: "left", View: g.view.ID + 1}, mcast.DoneEvent{Event: "done", Sent: g.stats["sent"]})
		return
	}
	if g.now.Before(g.nextLeave) {
		return
	}
	g.nextLeave = g.now.Add(g.cfg.Period)
	if g.acting() == g.cfg.ID {
		g.leaves[g.cfg.ID] = true
		return
	}
	g.send(g.acting(), Msg{Type: MsgLeave, View: g.view.ID, Member: g.me})
}

// Ready implements node.Machine.
func (g *Group) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: g.out, Events: g.events}
	g.out, g.events = nil, nil
	if !g.done {
		// A fixed schedule, not "half a period from now": a member fed a
		// line every few milliseconds would otherwise push its timers
		// back on every line and never send a heartbeat or join.
		if g.tickAt.IsZero() {
			g.tickAt = g.now.Add(g.cfg.Period / 2)
		}
		r.Wake = g.tickAt
		if w := g.batchWake(); !w.IsZero() && w.Before(r.Wake) {
			r.Wake = w
		}
		if o, ok := g.order.(*totemOrder); ok {
			if w := o.wake(); !w.IsZero() && w.Before(r.Wake) {
				r.Wake = w
			}
		}
	}
	return r
}

// deliveredSet is which messages of each view member this member has
// delivered, where the order delivers by position (the sequencer's and
// TOTEM's): a sender's messages are delivered in its order there too
// (their positions rise with their numbers), so a count per sender holds
// them, and a set the few delivered ahead of it (a view change's finish,
// a planted bug). A map of every (sender, number) delivered in the view
// cost a flood a tenth of a member's time in hashing and grew by one
// entry per message.
type deliveredSet struct {
	upto  []uint64          // per view member: every message up to here delivered
	ahead []map[uint64]bool // per view member: delivered past upto+1
}

func newDeliveredSet(n int) deliveredSet {
	return deliveredSet{upto: make([]uint64, n), ahead: make([]map[uint64]bool, n)}
}

// has reports whether message q of member j was delivered.
func (d *deliveredSet) has(j int, q uint64) bool { return q <= d.upto[j] || d.ahead[j][q] }

// add records message q of member j as delivered.
func (d *deliveredSet) add(j int, q uint64) {
	if q <= d.upto[j] {
		return
	}
	if q != d.upto[j]+1 {
		if d.ahead[j] == nil {
			d.ahead[j] = map[uint64]bool{}
		}
		d.ahead[j][q] = true
		return
	}
	d.upto[j] = q
	for d.ahead[j][d.upto[j]+1] {
		delete(d.ahead[j], d.upto[j]+1)
		d.upto[j]++
	}
}
