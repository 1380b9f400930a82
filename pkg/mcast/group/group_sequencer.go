package group

import (
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TotalSequencer: the view's leader stamps every message with its
// position in one order (Nita-Rotaru's CS7610 notes, "agreed delivery"; a fixed
// sequencer); the next view's leader goes on after a failure.
const TotalSequencer Total = 1

// sequencerOrder: the view's leader gives each message it has received
// without a gap the next position and sends the positions (MsgOrder,
// batched, group_batch.go); every member delivers in position order.
type sequencerOrder struct {
	positions
	orderSent uint64 // the stamps sent so far in this view (the leader)
}

func newSequencer(g *Group) totalOrder { return &sequencerOrder{positions: positions{fifoOrder{g: g}}} }

func (o *sequencerOrder) reset(n int) { o.orderSent = 0 }

func (o *sequencerOrder) deliver() {
	if g := o.g; g.leader() == g.cfg.ID {
		o.stamp()
	}
	o.positions.deliver()
}

// stamp: the sequencer gives each message it has received without a gap
// the next position, and tells every member.
func (o *sequencerOrder) stamp() {
	g := o.g
	start := uint64(len(g.stamps)) + 1
	for j, m := range g.view.Members {
		for q := g.deliv[j] + 1; q <= g.recv[j]; q++ {
			s := Stamp{m.ID, q}
			if !g.stamped[s] {
				g.stamped[s] = true
				g.stamps = append(g.stamps, s)
			}
			g.deliv[j] = q // stamped up to here
		}
	}
	if uint64(len(g.stamps)) >= start {
		g.ctrl() // to every member, batched (group_batch.go)
	}
}

// sendBatch: the leader's new stamps go first, to every member.
func (o *sequencerOrder) sendBatch(acks func()) {
	g := o.g
	if g.leader() == g.cfg.ID {
		for start := o.orderSent + 1; start <= uint64(len(g.stamps)); {
			end := min(uint64(len(g.stamps)), start-1+maxStamps)
			for _, id := range g.others() {
				g.send(id, Msg{Type: MsgOrder, View: g.view.ID, Start: start, Stamps: slices.Clone(g.stamps[start-1 : end])})
			}
			start = end + 1
		}
		o.orderSent = uint64(len(g.stamps))
	}
	acks()
}

func (o *sequencerOrder) status(st *Status) { st.Stamps = uint64(len(o.g.stamps)) }

// positions is an order that is a list of positions, each naming one
// message (Group.stamps): the sequencer's stamps and TOTEM's token
// numbers. Positions that come early wait in Group.stampAt; members
// deliver in position order, and a view change delivers the positions up
// to the cut's OrderCut first, then the rest of the cut by sender and
// number.
type positions struct{ fifoOrder }

func (o *positions) stamping() bool { return true }

// frame takes positions (MsgOrder): the leader's stamps, or another
// member's copies of them.
func (o *positions) frame(from node.ID, i int, m Msg) {
	g := o.g
	if m.Type != MsgOrder {
		return
	}
	for k, s := range m.Stamps {
		p := m.Start + uint64(k)
		if p > uint64(len(g.stamps)) {
			g.stampAt[p] = s
		}
	}
	g.advanceStamps()
	if len(g.stampAt) > 0 {
		// Positions missing: ask for them, and for none of the
		// sender's messages (askPositions).
		g.status(from, true, g.askPositions())
	}
	g.deliver()
	g.checkReady() // last: it may install the next view
}

// deliver delivers in position order, up to the first position whose
// message is not held (or not yet safe).
func (o *positions) deliver() {
	g := o.g
	for g.nextPos <= uint64(len(g.stamps)) {
		s := g.stamps[g.nextPos-1]
		j, ok := g.pos[s.Sender]
		if !ok || s.Seq > g.recv[j] {
			if g.cfg.bug == bugSkipGap && ok {
				g.nextPos++
				continue
			}
			return
		}
		done := g.delivered.has(j, s.Seq)
		if !done && (!g.safe(j, s.Seq) || g.backlogged()) {
			return
		}
		if !done {
			g.deliverOne(j, s.Seq)
		}
		g.nextPos++
	}
}

// finish delivers the stamped messages of the cut in stamp order, then
// the rest by sender and number (the same at every survivor).
func (o *positions) finish(c *Change) {
	g := o.g
	cut := c.Cut
	for p := g.nextPos; p <= c.OrderCut && p <= uint64(len(g.stamps)); p++ {
		s := g.stamps[p-1]
		if j, ok := g.pos[s.Sender]; ok && s.Seq <= cut[j] && !g.delivered.has(j, s.Seq) {
			g.deliverOne(j, s.Seq)
		}
	}
	for j := range g.view.Members {
		for q := uint64(1); q <= cut[j] && q <= g.recv[j]; q++ {
			if !g.delivered.has(j, q) {
				g.deliverOne(j, q)
			}
		}
	}
}
