package group

import (
	"cmp"
	"github.com/roundtable-go/roundtable/pkg/mcast"
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
// (rideTo): in a flood where every member sends, the order costs
// little beyond the data's own frames.

// maxPrios bounds the priorities of one frame: at most 30 bytes each, so
// that a frame stays within a datagram (a larger one is never sent, and
// the retransmission that made it would repeat for ever).
const maxPrios = 1024

// TotalISIS: Nita-Rotaru's ISIS total order: proposed priorities from
// every member, the largest agreed by the sender.
const TotalISIS Total = 3

// isisOrder is the ISIS total order (above).
type isisOrder struct {
	fifoOrder
	isisState
	heads []isisHead // deliver's scratch
}

func newISIS(g *Group) totalOrder { return &isisOrder{fifoOrder: fifoOrder{g: g}} }

// onSend: a member proposes for its own messages too.
func (o *isisOrder) onSend(me int, it *mcast.Item) { o.propose(me, it.Seq) }

// sent: the proposals and agreed priorities of its own messages go.
func (o *isisOrder) sent() { o.g.ctrl() }

// received: proposals for each sender's messages in their order (not
// during a view change: the cut settles those).
func (o *isisOrder) received(j int, from, to uint64) {
	if o.g.flushing {
		return
	}
	for q := from; q <= to; q++ {
		o.propose(j, q)
	}
}

// ctrlOnData: new data gives proposals to send.
func (o *isisOrder) ctrlOnData() bool { return true }

// frame takes proposals for this member's messages (MsgPrio) and agreed
// priorities (MsgFinal).
func (o *isisOrder) frame(from node.ID, i int, m Msg) {
	g := o.g
	switch m.Type {
	case MsgPrio:
		for _, it := range m.Prios {
			if it.Sender == g.cfg.ID && it.Prio.By == from {
				o.proposal(it.Seq, i, it.Prio)
			}
		}
		g.ctrl()
		g.deliver()
	case MsgFinal:
		o.takeFinals(m.Prios)
		g.deliver()
		g.checkReady() // last: it may install the next view
	}
}

// onStatus sends the agreed priorities the status shows missing, and
// notes how far member i has agreed its own messages (resend).
func (o *isisOrder) onStatus(from node.ID, i int, m Msg) bool {
	if len(m.Finals) == len(o.g.view.Members) {
		o.agreedBy[i] = max(o.agreedBy[i], m.Finals[i])
	}
	// An ask for named messages (askGap) asks for data, not agreed
	// priorities: those go as a heartbeat's would.
	o.retransmit(from, m.Finals, m.Reject && len(m.Stamps) == 0)
	return false
}

// sendBatch: proposals and agreed priorities go after the
// acknowledgements.
func (o *isisOrder) sendBatch(acks func()) {
	acks()
	o.flush()
}

func (o *isisOrder) beat() {
	if !o.g.flushing {
		o.resend()
	}
}

func (o *isisOrder) finals() []uint64 { return slices.Clone(o.finalRecv) }
func (o *isisOrder) agreed() []uint64 { return o.finalRecv }

func (o *isisOrder) status(st *Status) { st.Agreed = slices.Clone(o.finalRecv) }

// ride: what waits rides on a data frame of size bytes (rideTo), in the
// room the frame leaves: every agreed priority or none, and proposals
// for each receiver's messages.
func (o *isisOrder) ride(size int, to []node.ID) [][]PrioItem {
	if o.g.cfg.bug == bugNoRide {
		return nil
	}
	room := max(budget-size, 0) / prioSize
	finals := len(o.finalOut) <= room
	out := make([][]PrioItem, len(to))
	for k, id := range to {
		if room > 0 {
			out[k] = o.rideTo(id, room, finals)
		}
	}
	if finals {
		o.finalOut = o.finalOut[:0]
	}
	return out
}

// isisState is the per-view ISIS state.
type isisState struct {
	n         uint64            // the largest priority number seen or proposed
	prop      prioTable         // this member's proposals
	final     prioTable         // agreed priorities
	finalRecv []uint64          // per member: agreed priorities held without a gap
	got       map[uint64][]Prio // own messages: proposals received, by position in the view
	finalSent uint64            // own messages: agreed up to here
	prioOut   map[node.ID][]PrioItem
	finalOut  []PrioItem // own messages agreed while handling a frame, not yet sent
	agreedBy  []uint64   // per member: its own messages agreed up to here, as its status showed
}

func (o *isisOrder) reset(n int) {
	o.isisState = isisState{n: o.n, prop: newPrioTable(n), final: newPrioTable(n), finalRecv: make([]uint64, n),
		got: map[uint64][]Prio{}, prioOut: map[node.ID][]PrioItem{}, agreedBy: make([]uint64, n)}
}

// propose: message q of member j arrived in order; propose.
func (o *isisOrder) propose(j int, q uint64) {
	g := o.g
	s := &o.isisState
	s.n++
	p := Prio{s.n, g.cfg.ID}
	m := g.view.Members[j].ID
	s.prop.set(j, q, p)
	if m == g.cfg.ID {
		o.proposal(q, g.pos[g.cfg.ID], p)
		return
	}
	s.prioOut[m] = append(s.prioOut[m], PrioItem{Sender: m, Seq: q, Prio: p})
}

// flush sends the proposals and the agreed priorities gathered
// while handling a frame: one frame per member for all of them, not one
// per proposal that completed an agreement (a frame of proposals for
// many messages agrees on many at once).
func (o *isisOrder) flush() {
	g := o.g
	s := &o.isisState
	for out := s.finalOut; len(out) > 0; {
		k := min(len(out), maxPrios)
		for _, id := range g.others() {
			g.send(id, Msg{Type: MsgFinal, View: g.view.ID, Prios: slices.Clone(out[:k])})
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
			g.send(to, Msg{Type: MsgPrio, View: g.view.ID, Prios: slices.Clone(items[:k])})
			items = items[k:]
		}
		delete(s.prioOut, to)
	}
}

// proposal records member i's proposal for own message q.
func (o *isisOrder) proposal(q uint64, i int, p Prio) {
	g := o.g
	s := &o.isisState
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
	// flush.
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
		s.final.set(me, q, best)
		s.finalRecv[me] = q
		s.n = max(s.n, best.N)
		s.finalOut = append(s.finalOut, PrioItem{Sender: g.cfg.ID, Seq: q, Prio: best})
	}
}

// takeFinals records agreed priorities (from their sender or relayed).
func (o *isisOrder) takeFinals(items []PrioItem) {
	g := o.g
	s := &o.isisState
	for _, it := range items {
		j, ok := g.pos[it.Sender]
		if !ok || it.Seq <= s.finalRecv[j] {
			continue
		}
		s.final.set(j, it.Seq, it.Prio)
		s.n = max(s.n, it.Prio.N)
		for {
			if _, ok := s.final.get(j, s.finalRecv[j]+1); !ok {
				break
			}
			s.finalRecv[j]++
		}
	}
}

// prio is message (j, q)'s place in the queue: agreed, or this
// member's proposal (a lower bound of the agreed one).
func (o *isisOrder) prio(j int, q uint64) (Prio, bool) {
	if p, ok := o.final.get(j, q); ok {
		return p, true
	}
	p, _ := o.prop.get(j, q)
	return p, false
}

// deliver delivers heads with agreed priorities. Each sender's first
// undelivered message stands for it: its later ones get larger agreed
// priorities (see above). Each sender's head is looked up once per call
// and again only after it is delivered (heads), not every sender's for
// each delivery: n map lookups per message were a third of a 9-member
// flood's CPU.
func (o *isisOrder) deliver() {
	g := o.g
	n := len(g.view.Members)
	if cap(o.heads) < n {
		o.heads = make([]isisHead, n)
	}
	heads := o.heads[:n]
	look := func(j int) {
		h := &heads[j]
		h.ok = g.deliv[j] < g.recv[j]
		if h.ok {
			h.p, h.agreed = o.prio(j, g.deliv[j]+1)
		}
	}
	for j := range heads {
		look(j)
	}
	for {
		head := -1
		for j, h := range heads {
			if h.ok && (head < 0 || h.p.less(heads[head].p)) {
				head = j
			}
		}
		if head < 0 || !heads[head].agreed && g.cfg.bug != bugISISEarly {
			return
		}
		if !g.safe(head, g.deliv[head]+1) || g.backlogged() {
			return
		}
		g.deliverOne(head, g.deliv[head]+1)
		look(head)
	}
}

// isisHead is a sender's first undelivered message's place in deliver's
// queue: ok (there is one), its priority and whether it is agreed.
type isisHead struct {
	p          Prio
	ok, agreed bool
}

// resend: with each heartbeat, proposals not yet agreed go to their
// senders again (a lost proposal would hold the message for ever), but
// not those of messages their sender's status showed agreed: it takes
// no proposal for them (proposal), and their agreed priorities come by
// retransmit. In a 9-member flood where agreement lags by more than half
// a Period, resending proposals their senders no longer needed (up to
// 256 per member and heartbeat) was a fifth of a member's CPU.
func (o *isisOrder) resend() {
	g := o.g
	s := &o.isisState
	h := g.heldBefore() // proposed half a Period ago or more: not in flight
	if h == nil {
		return
	}
	for j, m := range g.view.Members {
		if m.ID == g.cfg.ID {
			continue
		}
		from := max(s.finalRecv[j], s.agreedBy[j])
		for q := from + 1; q <= min(g.recv[j], h.recv[j]) && len(s.prioOut[m.ID]) < 256; q++ {
			if p, ok := s.prop.get(j, q); ok {
				s.prioOut[m.ID] = append(s.prioOut[m.ID], PrioItem{Sender: m.ID, Seq: q, Prio: p})
			}
		}
	}
	o.flush()
}

// retransmit sends a member the agreed priorities its status lacks
// (those this member held half a Period ago, unless the status asks: as
// retransmit). Outside view changes and unasked, a member
// sends only its own messages' agreed priorities: their sender holds
// them all (it agreed them, Nita-Rotaru's CS7610 notes, "ISIS total
// order": the sender sends the final priority to everyone), and a
// sender that fails is replaced by a view change, which sends them all.
// Every member relaying every sender's, up to maxPrios per status, sent
// each lagging member the same agreed priorities from n−1 members: in a
// 9-member flood a sixth of a member's CPU (the planted bugRelayFinals).
// With EVS too (seeds 69 and 173 of TestSimGroups/isis/evs let a member
// deliver another component's message only while frames named their
// view by number only; doc.go, "views numbered alike").
func (o *isisOrder) retransmit(to node.ID, finals []uint64, ask bool) {
	g := o.g
	if len(finals) != len(g.view.Members) {
		return
	}
	top := o.finalRecv
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
	own := !ask && !g.flushing && g.cfg.bug != bugRelayFinals
	var out []PrioItem
	for j, m := range g.view.Members {
		if own && m.ID != g.cfg.ID {
			continue
		}
		for q := finals[j] + 1; q <= min(o.finalRecv[j], top[j]) && len(out) < maxPrios; q++ {
			p, _ := o.final.get(j, q)
			out = append(out, PrioItem{Sender: m.ID, Seq: q, Prio: p})
		}
	}
	if len(out) > 0 {
		g.stats["retransmitted"] += uint64(len(out))
		g.send(to, Msg{Type: MsgFinal, View: g.view.ID, Prios: out})
	}
}

// finish delivers the rest of the cut at a view change: agreed ones
// in priority order, then the others by sender and number.
func (o *isisOrder) finish(c *Change) {
	g := o.g
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
		pa, _ := o.final.get(g.pos[a.Sender], a.Seq)
		pb, _ := o.final.get(g.pos[b.Sender], b.Seq)
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

// rideTo is what rides on a data frame to member to (at most room
// items): this member's agreed priorities (finals: all of them, or none
// when they do not all fit; the caller then forgets them) and its
// proposals for to's messages. A member that sends data anyway sends
// its order frames with it: in a flood where every member sends, ISIS
// costs about the data's frames, not three times them (Nita-Rotaru's
// 3(n−1) per message, batched).
func (o *isisOrder) rideTo(to node.ID, room int, finals bool) []PrioItem {
	s := &o.isisState
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

// rode takes the priorities that rode on a data frame of member i
// (from): proposals for this member's messages, and from's agreed
// priorities of its own.
func (o *isisOrder) rode(from node.ID, i int, prios []PrioItem) {
	g := o.g
	var finals []PrioItem
	for _, it := range prios {
		switch {
		case it.Sender == g.cfg.ID && it.Prio.By == from:
			o.proposal(it.Seq, i, it.Prio)
		case it.Sender == from:
			finals = append(finals, it)
		}
	}
	o.takeFinals(finals)
}

// prioTable holds a priority per message of a view, by the sender's
// position and the message's number: a slice per sender indexed by
// number, since each sender's messages are numbered from 1 in a view and
// a member proposes for them, and learns their agreed priorities, nearly
// in that order. Maps keyed by Stamp held every message of the view
// (180,000 in a 9-member flood of 20,000 each): each lookup a cache miss,
// a third of a member's CPU in such a flood. A priority far beyond a
// sender's slice (not seen in a run: agreement needs this member's own
// proposal, so it follows the message) goes in far, so that no frame
// makes the slice grow without bound.
type prioTable struct {
	by  [][]Prio // by[j][q-1]: message q of member j (By == node.None: none)
	far map[prioKey]Prio
}

// prioKey is a message in prioTable.far: its sender's position, its number.
type prioKey struct {
	j int
	q uint64
}

// prioFar bounds how far past a sender's slice set extends it.
const prioFar = 1 << 16

func newPrioTable(n int) prioTable { return prioTable{by: make([][]Prio, n)} }

func (t *prioTable) get(j int, q uint64) (Prio, bool) {
	if s := t.by[j]; q >= 1 && q <= uint64(len(s)) && s[q-1].By != node.None {
		return s[q-1], true
	}
	if len(t.far) == 0 {
		return Prio{}, false
	}
	p, ok := t.far[prioKey{j, q}]
	return p, ok
}

func (t *prioTable) set(j int, q uint64, p Prio) {
	s := t.by[j]
	if q == 0 || q > uint64(len(s))+prioFar {
		if t.far == nil {
			t.far = map[prioKey]Prio{}
		}
		t.far[prioKey{j, q}] = p
		return
	}
	for uint64(len(s)) < q {
		s = append(s, Prio{})
	}
	s[q-1] = p
	t.by[j] = s
}
