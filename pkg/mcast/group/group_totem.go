package group

import (
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TOTEM's single-ring total order (Nita-Rotaru's CS7610 notes, "TOTEM"): a token goes round
// the members of the view in view order; only the member holding it
// multicasts, and it numbers each of its messages with the next position
// of the view's order (Token.Seq), carried on the message itself (Item.TS),
// so no acknowledgement and no separate order frame is needed. Every
// member delivers in position order. The token also carries, per member,
// how far it has received everything (Arus: TOTEM's aru), which makes safe
// delivery possible (a position every entry has reached is held by all),
// and the positions members lack (Rtr), which the holder sends again.
//
// Filled in here: the view's leader makes the token when a view is
// installed (TOTEM forms a new ring on token loss; here a lost member
// leads to a view change and a new token). A member passes the token on
// at once after multicasting, and at once too when it has nothing to
// send: the notes' token circulates, so a message waits for one rotation
// of hops, not for a timer at every holder. The notes say nothing of an
// idle ring, whose token would spin as fast as the links go; corosync's
// choice fills that gap (corosync.conf(5), "hold": the token is held by
// the representative when the protocol is under low utilisation): once the
// token has come back totemHoldRounds times in a row with no new position
// on it and no retransmission asked, the view's leader (its first member,
// corosync's representative) and only the leader keeps it, until Period/4
// has passed (its own wake-up, not the next tick) or a message is queued
// there (corosync holds 180 ms by default; here the hold stays short, so
// that a lost cancel costs little). A member that queues a message while
// the ring is idle and the token is elsewhere sends the leader
// MsgHoldCancel (corosync's token hold cancel), and the leader passes the
// token on at once; a lost cancel costs at most the Period/4. An idle ring thus turns once per Period/4
// and a rotation, and a message queued on it waits for a link and at
// most a rotation. A holder with messages sends its successor's copies,
// then the token, then the other members' copies (tokenEarly): the
// notes' holder multicasts and then passes the token, and this order
// keeps what the token names ahead of it at the successor while the
// token no longer waits behind n-2 sends. A member sends the same token again each Period
// until its successor's status or the token's return shows it got there.
// The token's arus say what the all-to-all statuses
// say, so TOTEM members send their heartbeats every 2·Period only, to
// detect failures (Group.beat), and the token's return counts as hearing
// every member it went through (rotated). Everything else (retransmission of data,
// flushing at view changes, positions as the sequencer's stamps) is the
// group's common machinery.

// totemState is a member's token state in the current view.
type totemState struct {
	lastRot  uint64    // the highest Rot seen: older copies are duplicates
	holding  *Token    // the token, while this member holds it
	heldAt   time.Time // when it came
	passed   *Token    // the last token passed on, sent again until confirmed
	passedAt time.Time
	succRot  uint64    // the highest Rot the successor's status has shown
	seenSeq  uint64    // the token's Seq when it last came here
	sentRot  uint64    // the Rot this member last passed the token on with
	sentAt   time.Time // when it first passed it (resends do not move it)
	idle     int       // tokens in a row that came back with no new position
	cancelAt uint64    // the Rot after which this member last sent MsgHoldCancel
	myAru    uint64    // every position up to here is held here
	safeAru  uint64    // every position up to here is held by every member
}

// TotalTotem: Nita-Rotaru's TOTEM single ring: a token goes round the
// view; its holder numbers and multicasts its messages.
const TotalTotem Total = 4

// totemOrder is TOTEM's single ring (above): positions given out by the
// token's holder.
type totemOrder struct {
	positions
	totemState
}

func newTotem(g *Group) totalOrder { return &totemOrder{positions: positions{fifoOrder{g: g}}} }

func (o *totemOrder) reset(n int) { o.totemState = totemState{} }

// start: the view's leader makes the token.
func (o *totemOrder) start() {
	g := o.g
	if g.leader() == g.cfg.ID {
		o.onToken(&Token{Rot: 1, Arus: make([]uint64, len(g.view.Members))})
	}
}

// maySend: only the token's holder multicasts.
func (o *totemOrder) maySend() bool { return o.holding != nil }

// waiting: a message is queued here and the token is elsewhere. If the
// ring looks idle from here the leader may be holding the token: ask it
// to pass the token on (corosync's token hold cancel), once per pass of
// the token here. This member counts one return fewer than the leader
// when the leader starts a hold (the token reaches it after the leader),
// hence totemHoldRounds-1. On a busy ring nothing is sent.
func (o *totemOrder) waiting() {
	g := o.g
	t := &o.totemState
	if t.idle < totemHoldRounds-1 || t.cancelAt == t.lastRot || g.flushing || g.leader() == g.cfg.ID ||
		g.cfg.bug == bugTotemNoCancel || g.cfg.bug == bugTotemHoldAll {
		return
	}
	t.cancelAt = t.lastRot
	g.stats["hold-cancel-sent"]++
	g.send(g.leader(), Msg{Type: MsgHoldCancel, View: g.view.ID})
}

// holdCancelled: a member has a message queued on an idle ring. The
// leader counts the ring busy again (it will not start a hold when the
// token, perhaps on its way, comes back) and passes the token on at once
// if it holds it.
func (o *totemOrder) holdCancelled() {
	g := o.g
	t := &o.totemState
	if g.leader() != g.cfg.ID {
		return
	}
	t.idle = 0
	if t.holding != nil && !g.flushing && len(g.view.Members) > 1 {
		g.stats["hold-cancelled"]++
		o.pass()
	}
}

func (o *totemOrder) onSend(me int, it *mcast.Item) { o.stamp(it) }

// sent: the holder passes the token on at once after multicasting.
func (o *totemOrder) sent() { o.pass() }

// stored: a message carries its position (Item.TS).
func (o *totemOrder) stored(j int, it mcast.Item) {
	g := o.g
	if it.TS == 0 {
		return
	}
	st := Stamp{it.Sender, it.Seq}
	g.ts[st] = it.TS
	if it.TS > uint64(len(g.stamps)) {
		g.stampAt[it.TS] = st
		g.advanceStamps()
	}
}

// ackData: never; safe delivery has the token's aru.
func (o *totemOrder) ackData() bool { return false }

func (o *totemOrder) frame(from node.ID, i int, m Msg) {
	switch m.Type {
	case MsgToken:
		if m.Token != nil {
			o.onToken(m.Token)
		}
		return
	case MsgHoldCancel:
		o.holdCancelled()
		return
	}
	o.positions.frame(from, i, m)
}

// onStatus notes the token pass the successor's status shows.
func (o *totemOrder) onStatus(from node.ID, i int, m Msg) bool {
	g := o.g
	me := g.pos[g.cfg.ID]
	if g.view.Members[(me+1)%len(g.view.Members)].ID == from {
		o.succRot = max(o.succRot, m.Clock)
	}
	return false
}

// slowBeat: the token carries what the heartbeats would (Group.beat).
func (o *totemOrder) slowBeat() bool { return true }

// statusClock: the token pass this member has seen.
func (o *totemOrder) statusClock() uint64 { return o.lastRot }

func (o *totemOrder) status(st *Status) {
	st.Stamps, st.Token, st.Holding = uint64(len(o.g.stamps)), o.lastRot, o.holding != nil
}

// safe: the message's position is held by every member (the token's
// aru).
func (o *totemOrder) safe(j int, q uint64) bool {
	g := o.g
	return g.ts[Stamp{g.view.Members[j].ID, q}] <= o.safeAru
}

// advance moves myAru past every position held here (number and
// message).
func (o *totemOrder) advance() {
	g := o.g
	t := &o.totemState
	for t.myAru < uint64(len(g.stamps)) {
		s := g.stamps[t.myAru]
		j, ok := g.pos[s.Sender]
		if !ok || s.Seq > g.recv[j] {
			return
		}
		t.myAru++
	}
}

// onToken: the token arrived (or was made here).
func (o *totemOrder) onToken(tok *Token) {
	g := o.g
	t := &o.totemState
	if tok.Rot <= t.lastRot || g.flushing || len(tok.Arus) != len(g.view.Members) {
		return
	}
	t.lastRot, t.holding, t.heldAt = tok.Rot, tok, g.now
	t.passed = nil
	g.stats["tokens"]++
	o.rotated(tok.Rot)
	asked := len(tok.Rtr) > 0
	// Answer the retransmission requests this member can, and add its own.
	var resend []mcast.Item
	var rtr []uint64
	for _, p := range tok.Rtr {
		if p > uint64(len(g.stamps)) {
			rtr = append(rtr, p)
			continue
		}
		s := g.stamps[p-1]
		j := g.pos[s.Sender]
		if pl, ok := g.store[j][s.Seq]; ok {
			resend = append(resend, mcast.Item{Sender: s.Sender, Seq: s.Seq, TS: p, Payload: pl})
		} else {
			rtr = append(rtr, p)
		}
	}
	if len(resend) > 0 {
		g.stats["retransmitted"] += uint64(len(resend))
		g.broadcast(resend)
	}
	o.advance()
	// Ask only for positions given out before the token last came here:
	// a copy of those has had a whole rotation to arrive, so it is lost,
	// not on its way. A position given out since may still be in flight:
	// its holder sends the successor's copy, then the token, then the
	// others' copies (tokenEarly), and on a busy host the token can pass
	// the successor and reach a member before the holder's copy to it
	// does, a race the seed leaves open (Nita-Rotaru's CS7610 notes put
	// every missing position on the token). Asking for those at once
	// made 12-14% of the data copies in a 9-member run at 1,000 msgs/s
	// on loopback resends of messages already on their way, each a
	// broadcast to every member; a lost one now waits one rotation more.
	upto := tok.Seq
	if g.cfg.bug != bugTotemAsksInFlight {
		upto = min(upto, t.seenSeq)
	}
	for p := uint64(len(g.stamps)) + 1; p <= upto && len(rtr) < 256; p++ {
		if _, have := g.stampAt[p]; !have {
			rtr = append(rtr, p)
		}
	}
	slices.Sort(rtr)
	tok.Rtr = slices.Compact(rtr)
	me := g.pos[g.cfg.ID]
	tok.Arus[me] = t.myAru
	if g.cfg.bug == bugTotemStaleAru {
		tok.Arus[me] = tok.Seq // claims everything given out so far
	}
	t.safeAru = slices.Min(tok.Arus)
	if tok.Seq == t.seenSeq && !asked && len(tok.Rtr) == 0 {
		t.idle++
	} else {
		t.idle = 0
	}
	t.seenSeq = tok.Seq
	mark := len(g.out)
	g.flushQueue() // multicasts what waits, and passes the token on
	o.tokenEarly(mark)
	if t.holding == tok && len(g.view.Members) > 1 {
		if o.holds() {
			// An idle ring: the leader keeps the token (wake, tick).
			g.stats["token-held"]++
		} else {
			// Nothing to send: the token goes on at once.
			o.pass()
		}
	}
	g.deliver()
}

// rotated: the token came back to this member. Each member passes it
// only to its successor and takes each Rot once, so a token back here
// with the Rot this member passed on plus n-1 has been held and passed on
// by every other member of the ring since this member first passed it:
// each was alive then, and counts as heard at that instant (g.heard).
// The notes' token circulates and "after a full token rotation" a
// process knows what every process has done (Nita-Rotaru's CS7610 notes,
// "TOTEM: The single-ring protocol"); its rotation is the ring's liveness
// (Arantes and Sopena, "Easily rendering token-ring algorithms ... fault
// tolerant", §I: the token circulates among all nodes, so they monitor
// the token rather than every node). Without this a member heard only
// its predecessor through the token and every other member through
// statuses sent every 2·Period (Group.beat): at 15% loss four statuses
// in a row from one member are lost about once in 2,000 windows of
// Suspect, and a live member of a turning ring was taken out of the view.
func (o *totemOrder) rotated(rot uint64) {
	g := o.g
	t := &o.totemState
	n := uint64(len(g.view.Members))
	if t.sentRot == 0 || n < 2 || rot != t.sentRot+n-1 || g.cfg.bug == bugTotemUnheard {
		return
	}
	me := g.pos[g.cfg.ID]
	for i := range g.heard {
		if i != me && g.heard[i].Before(t.sentAt) {
			g.heard[i] = t.sentAt
		}
	}
}

// holds: this member, with nothing to send, keeps the token that came
// (rather than passing it on at once): it is the view's leader and the
// ring is idle (above).
func (o *totemOrder) holds() bool {
	g := o.g
	switch g.cfg.bug {
	case bugTotemHoldIdle:
		return true // every holder, busy ring or not
	case bugTotemHoldAll:
		return o.idle >= totemHoldRounds // every member, not only the leader
	}
	return o.idle >= totemHoldRounds && g.leader() == g.cfg.ID
}

// totemHoldRounds is how many returns of the token in a row with nothing
// new on it make the ring idle, when the leader keeps the token for
// Period/4 instead of passing it on at once: corosync's
// seqno_unchanged_const (corosync.conf(5): rotations of the token without
// multicast traffic before the hold timer starts; 30 by default). Fewer make holds frequent on a
// ring that is only lightly used: at 1,000 messages/s from each of 3
// members a rotation (about 100 µs on loopback) carries 0.3 messages,
// and 3 quiet rotations in a row come about a third of the time (0.7³),
// 30 about once in 50,000 (0.7³⁰); with the cancel a hold costs a link,
// not Period/4, but a cancel is a frame. The cost of 30: an idle ring
// turns 30 times before it settles, once per quiet stretch (3 ms on
// loopback at 3 members).
const totemHoldRounds = 30

// stamp gives this member's message its position (the holder only).
func (o *totemOrder) stamp(it *mcast.Item) {
	g := o.g
	tok := o.holding
	tok.Seq++
	it.TS = tok.Seq
	st := Stamp{g.cfg.ID, it.Seq}
	g.ts[st] = tok.Seq
	g.stampAt[tok.Seq] = st
	g.advanceStamps()
}

// tokenEarly reorders what this holding step sends (g.out from mark):
// the copies for the successor, then the token, then the copies for the
// others. The successor holds everything the token names when it reads
// the token (one socket, sent in order), and passes it on without waiting
// for the holder's n-2 other sends; each further member's copy goes out
// a hop before the token can reach it.
func (o *totemOrder) tokenEarly(mark int) {
	g := o.g
	n := len(g.out)
	if n <= mark+1 || g.out[n-1].Msg.Type != MsgToken || g.cfg.bug == bugTotemTokenLast {
		return
	}
	// A stable in-place partition (no allocation per holding step): the
	// successor's copies keep their order, then the token, then the rest.
	next := g.out[n-1].To
	rank := func(e node.Envelope[Msg]) int {
		switch {
		case e.Msg.Type == MsgToken:
			return 1
		case e.To == next:
			return 0
		}
		return 2
	}
	slices.SortStableFunc(g.out[mark:n], func(a, b node.Envelope[Msg]) int { return rank(a) - rank(b) })
	o.tokenCarries(mark)
}

// tokenCarries puts the successor's copies, which tokenEarly placed right ahead
// of the token, on the token itself when they fit in one frame with it:
// one datagram to the successor where there were two, and one wake-up of
// it. The successor takes the copies in before the token (Group.handle),
// as it would from the frames in their order. The notes' token is a
// message of its own; what travels with it is the wire's business. A
// token sent again each Period (tick) goes alone: those copies are
// repaired as any others are, by the token's Rtr.
func (o *totemOrder) tokenCarries(mark int) {
	g := o.g
	if g.cfg.bug == bugTotemTokenAlone {
		return
	}
	k := mark
	for k < len(g.out) && g.out[k].Msg.Type == MsgData {
		k++
	}
	if k == mark || k == len(g.out) || g.out[k].Msg.Type != MsgToken {
		return
	}
	tok := &g.out[k].Msg
	size := 32 + 10*(len(tok.Token.Arus)+len(tok.Token.Rtr))
	var items []mcast.Item
	for _, e := range g.out[mark:k] {
		if len(e.Msg.Prios) > 0 || e.Msg.View != tok.View {
			return
		}
		for _, it := range e.Msg.Items {
			size += len(it.Payload) + 16
		}
		items = append(items, e.Msg.Items...)
	}
	if size > budget || len(items) > maxItems {
		return
	}
	tok.Items = items
	g.out = slices.Delete(g.out, mark, k)
}

// pass sends the token to the next member of the view.
func (o *totemOrder) pass() {
	g := o.g
	t := &o.totemState
	tok := t.holding
	if tok == nil {
		return
	}
	t.holding = nil
	me := g.pos[g.cfg.ID]
	if len(g.view.Members) == 1 {
		// Alone: the ring is this member; keep the token turning here.
		tok.Rot++
		tok.Arus[me] = t.myAru
		t.lastRot, t.holding, t.heldAt = tok.Rot, tok, g.now
		t.safeAru = t.myAru
		return
	}
	next := g.view.Members[(me+1)%len(g.view.Members)].ID
	tok.Rot++
	t.passed, t.passedAt = tok, g.now
	t.sentRot, t.sentAt = tok.Rot, g.now
	g.send(next, Msg{Type: MsgToken, View: g.view.ID, Token: cloneToken(tok)})
}

func cloneToken(t *Token) *Token {
	return &Token{Rot: t.Rot, Seq: t.Seq, Arus: slices.Clone(t.Arus), Rtr: slices.Clone(t.Rtr)}
}

// wake is when an idle holder passes the token on (zero: it holds none):
// Period/4 after it came, a wake-up of its own. Left to the group's
// ticks, every Period/2, a hold lasted Period/4 to Period/2 (and longer
// on a busy host, where a late tick is later still), and every message
// queued at the other members whose cancel was lost waited for it.
func (o *totemOrder) wake() time.Time {
	g := o.g
	t := &o.totemState
	if t.holding == nil || g.flushing || len(g.view.Members) < 2 || g.cfg.bug == bugTotemHoldToTick {
		return time.Time{}
	}
	return t.heldAt.Add(g.cfg.Period / 4)
}

// tick passes an idle token on and sends a passed one again until the
// successor has shown it got it.
func (o *totemOrder) tick() {
	g := o.g
	t := &o.totemState
	if g.flushing {
		t.holding = nil
		return
	}
	if t.holding != nil && g.now.Sub(t.heldAt) >= g.cfg.Period/4 {
		o.pass()
		return
	}
	if p := t.passed; p != nil && t.succRot < p.Rot && g.now.Sub(t.passedAt) >= g.cfg.Period {
		me := g.pos[g.cfg.ID]
		t.passedAt = g.now
		g.stats["token-resent"]++
		g.send(g.view.Members[(me+1)%len(g.view.Members)].ID, Msg{Type: MsgToken, View: g.view.ID, Token: cloneToken(p)})
	}
}
