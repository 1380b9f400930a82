package mcast

import (
	"cmp"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// ISIS total order (Nita-Rotaru's CS7610 notes, "ISIS total order"): a message goes to every
// member; each member proposes a priority above every one it has seen and
// sends it to the sender; the sender takes the largest proposal as the
// agreed (final) priority and sends it to everyone; a member delivers the
// message at the head of its queue, ordered by agreed priority where
// known and by its own proposal otherwise, once the head's priority is
// agreed. 3(n−1) frames per message.
//
// Filled in here: a member proposes for each sender's messages in their
// order (when they arrive without a gap), so every member's proposals,
// and therefore the agreed priorities, grow with a sender's sequence
// numbers: total order keeps FIFO. A sender announces agreed priorities
// in sequence order, so the ones a member holds are a prefix per sender
// (Finals in its status); lost proposals are sent again with each
// heartbeat, lost agreed priorities are sent by whoever holds them when a
// status shows them missing. A view change fixes a prefix per sender
// (Change.FinalCut): the survivors deliver the rest of the cut, first the
// messages with agreed priorities in that order, then the others by
// sender and number. What a member had delivered is a prefix of the
// former (a message it had not yet received would get a proposal of its
// above everything it had seen).
//
// Proposals and agreed priorities go in batches (group_batch.go), and
// those waiting when a member sends data ride on its data frames
// (isisRide): in a flood where every member sends, the order costs
// little beyond the data's own frames.

// maxPrios bounds the priorities of one frame: at most 30 bytes each, so
// that a frame stays within a datagram (a larger one is never sent, and
// the retransmission that made it would repeat for ever).
const maxPrios = 1024

// isisState is the per-view ISIS state.
type isisState struct {
	n         uint64            // the largest priority number seen or proposed
	prop      map[Stamp]Prio    // this member's proposals
	final     map[Stamp]Prio    // agreed priorities
	finalRecv []uint64          // per member: agreed priorities held without a gap
	got       map[uint64][]Prio // own messages: proposals received, by position in the view
	finalSent uint64            // own messages: agreed up to here
	prioOut   map[node.ID][]PrioItem
	finalOut  []PrioItem // own messages agreed while handling a frame, not yet sent
}

func (g *Group) isisReset(n int) {
	g.isis = isisState{n: g.isis.n, prop: map[Stamp]Prio{}, final: map[Stamp]Prio{}, finalRecv: make([]uint64, n),
		got: map[uint64][]Prio{}, prioOut: map[node.ID][]PrioItem{}}
}

// isisPropose: message q of member j arrived in order; propose.
func (g *Group) isisPropose(j int, q uint64) {
	s := &g.isis
	s.n++
	p := Prio{s.n, g.cfg.ID}
	m := g.view.Members[j].ID
	s.prop[Stamp{m, q}] = p
	if m == g.cfg.ID {
		g.isisGot(q, g.pos[g.cfg.ID], p)
		return
	}
	s.prioOut[m] = append(s.prioOut[m], PrioItem{Sender: m, Seq: q, Prio: p})
}

// isisFlush sends the proposals and the agreed priorities gathered
// while handling a frame: one frame per member for all of them, not one
// per proposal that completed an agreement (a frame of proposals for
// many messages agrees on many at once).
func (g *Group) isisFlush() {
	s := &g.isis
	for out := s.finalOut; len(out) > 0; {
		k := min(len(out), maxPrios)
		for _, id := range g.others() {
			g.send(id, GMsg{Type: GFinal, View: g.view.ID, Prios: slices.Clone(out[:k])})
		}
		out = out[k:]
	}
	s.finalOut = s.finalOut[:0]
	for _, to := range slices.Sorted(func(yield func(node.ID) bool) {
		for id := range s.prioOut {
			if !yield(id) {
				return
			}
		}
	}) {
		items := s.prioOut[to]
		for len(items) > 0 {
			k := min(len(items), maxPrios)
			g.send(to, GMsg{Type: GPrio, View: g.view.ID, Prios: slices.Clone(items[:k])})
			items = items[k:]
		}
		delete(s.prioOut, to)
	}
}

// isisGot records member i's proposal for own message q.
func (g *Group) isisGot(q uint64, i int, p Prio) {
	s := &g.isis
	if q <= s.finalSent || q > g.seq {
		return
	}
	ps := s.got[q]
	if ps == nil {
		ps = make([]Prio, len(g.view.Members))
		s.got[q] = ps
	}
	ps[i] = p
	// Agree in sequence order, once every member has proposed; sent by
	// isisFlush.
	me := g.pos[g.cfg.ID]
	for q := s.finalSent + 1; q <= g.seq; q++ {
		ps := s.got[q]
		if ps == nil {
			break
		}
		best, all := Prio{}, true
		for _, p := range ps {
			if p.By == node.None {
				all = false
				break
			}
			if best.less(p) {
				best = p
			}
		}
		if !all {
			break
		}
		delete(s.got, q)
		s.finalSent = q
		s.final[Stamp{g.cfg.ID, q}] = best
		s.finalRecv[me] = q
		s.n = max(s.n, best.N)
		s.finalOut = append(s.finalOut, PrioItem{Sender: g.cfg.ID, Seq: q, Prio: best})
	}
}

// isisFinals records agreed priorities (from their sender or relayed).
func (g *Group) isisFinals(items []PrioItem) {
	s := &g.isis
	for _, it := range items {
		j, ok := g.pos[it.Sender]
		if !ok || it.Seq <= s.finalRecv[j] {
			continue
		}
		s.final[Stamp{it.Sender, it.Seq}] = it.Prio
		s.n = max(s.n, it.Prio.N)
		for {
			if _, ok := s.final[Stamp{it.Sender, s.finalRecv[j] + 1}]; !ok {
				break
			}
			s.finalRecv[j]++
		}
	}
}

// isisPrio is message (j, q)'s place in the queue: agreed, or this
// member's proposal (a lower bound of the agreed one).
func (g *Group) isisPrio(j int, q uint64) (Prio, bool) {
	st := Stamp{g.view.Members[j].ID, q}
	if p, ok := g.isis.final[st]; ok {
		return p, true
	}
	return g.isis.prop[st], false
}

// isisDeliver delivers heads with agreed priorities. Each sender's first
// undelivered message stands for it: its later ones get larger agreed
// priorities (see above).
func (g *Group) isisDeliver() {
	for {
		head, headP, agreed := -1, Prio{}, false
		for j := range g.view.Members {
			if g.deliv[j] >= g.recv[j] {
				continue
			}
			p, ok := g.isisPrio(j, g.deliv[j]+1)
			if head < 0 || p.less(headP) {
				head, headP, agreed = j, p, ok
			}
		}
		if head < 0 || !agreed && g.cfg.bug != gbugISISEarly {
			return
		}
		if !g.safe(head, g.deliv[head]+1) || g.backlogged() {
			return
		}
		g.deliverOne(head, g.deliv[head]+1)
	}
}

// isisResend: with each heartbeat, proposals not yet agreed go to their
// senders again (a lost proposal would hold the message for ever).
func (g *Group) isisResend() {
	s := &g.isis
	h := g.heldBefore() // proposed half a Period ago or more: not in flight
	if h == nil {
		return
	}
	for j, m := range g.view.Members {
		if m.ID == g.cfg.ID {
			continue
		}
		for q := s.finalRecv[j] + 1; q <= min(g.recv[j], h.recv[j]) && len(s.prioOut[m.ID]) < 256; q++ {
			if p, ok := s.prop[Stamp{m.ID, q}]; ok {
				s.prioOut[m.ID] = append(s.prioOut[m.ID], PrioItem{Sender: m.ID, Seq: q, Prio: p})
			}
		}
	}
	g.isisFlush()
}

// isisRetransmit sends a member the agreed priorities its status lacks
// (those this member held half a Period ago, unless the status asks: as
// retransmit).
func (g *Group) isisRetransmit(to node.ID, finals []uint64, ask bool) {
	if len(finals) != len(g.view.Members) {
		return
	}
	top := g.isis.finalRecv
	// With extended virtual synchrony agreed priorities go again at once,
	// not only what was held half a Period ago as for data: holding them
	// back left a member of a healed component in no view (seed 897 of
	// TestSimGroups/isis/evs, 18% loss).
	if !ask && !g.flushing && !g.cfg.EVS {
		h := g.heldBefore()
		if h == nil || len(h.finals) != len(top) {
			return
		}
		top = h.finals
	}
	var out []PrioItem
	for j, m := range g.view.Members {
		for q := finals[j] + 1; q <= min(g.isis.finalRecv[j], top[j]) && len(out) < maxPrios; q++ {
			out = append(out, PrioItem{Sender: m.ID, Seq: q, Prio: g.isis.final[Stamp{m.ID, q}]})
		}
	}
	if len(out) > 0 {
		g.stats["retransmitted"] += uint64(len(out))
		g.send(to, GMsg{Type: GFinal, View: g.view.ID, Prios: out})
	}
}

// isisFinish delivers the rest of the cut at a view change: agreed ones
// in priority order, then the others by sender and number.
func (g *Group) isisFinish(c *Change) {
	var agreed, rest []Stamp
	for j, m := range g.view.Members {
		for q := g.deliv[j] + 1; q <= c.Cut[j] && q <= g.recv[j]; q++ {
			if j < len(c.FinalCut) && q <= c.FinalCut[j] {
				agreed = append(agreed, Stamp{m.ID, q})
			} else {
				rest = append(rest, Stamp{m.ID, q})
			}
		}
	}
	slices.SortFunc(agreed, func(a, b Stamp) int {
		pa, pb := g.isis.final[a], g.isis.final[b]
		if pa == pb {
			return 0
		}
		if pa.less(pb) {
			return -1
		}
		return 1
	})
	slices.SortFunc(rest, func(a, b Stamp) int {
		if a.Sender != b.Sender {
			return cmp.Compare(a.Sender, b.Sender)
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	for _, st := range append(agreed, rest...) {
		g.deliverOne(g.pos[st.Sender], st.Seq)
	}
}

// prioSize bounds the bytes of one priority item on the wire.
const prioSize = 32

// isisRide is what rides on a data frame to member to (at most room
// items): this member's agreed priorities (finals: all of them, or none
// when they do not all fit; the caller then forgets them) and its
// proposals for to's messages. A member that sends data anyway sends
// its order frames with it: in a flood where every member sends, ISIS
// costs about the data's frames, not three times them (Nita-Rotaru's
// 3(n−1) per message, batched).
func (g *Group) isisRide(to node.ID, room int, finals bool) []PrioItem {
	s := &g.isis
	var out []PrioItem
	if finals {
		out = append(out, s.finalOut...)
	}
	props := s.prioOut[to]
	k := min(len(props), room-len(out))
	if k <= 0 {
		return out
	}
	out = append(out, props[:k]...)
	if k == len(props) {
		delete(s.prioOut, to)
	} else {
		s.prioOut[to] = props[k:]
	}
	return out
}

// isisRode takes the priorities that rode on a data frame of member i
// (from): proposals for this member's messages, and from's agreed
// priorities of its own.
func (g *Group) isisRode(from node.ID, i int, prios []PrioItem) {
	var finals []PrioItem
	for _, it := range prios {
		switch {
		case it.Sender == g.cfg.ID && it.Prio.By == from:
			g.isisGot(it.Seq, i, it.Prio)
		case it.Sender == from:
			finals = append(finals, it)
		}
	}
	g.isisFinals(finals)
}
