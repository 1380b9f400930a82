package group

import (
	"cmp"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TotalLamport: Tanenbaum's totally-ordered multicast (§6.3.1). Each
// message carries its sender's Lamport time; every receiver
// acknowledges to everyone; a member delivers the message at the head
// of its queue (least time, then sender ID) once it knows every other
// member's clock has passed it with every earlier message received.
const TotalLamport Total = 2

// lamportOrder is Tanenbaum's totally-ordered multicast (ch. 6, §6.3.1).
// The acknowledgements are the statuses (a status carries the member's
// clock, Clock, and what it received, Recv), sent to everyone when new
// data comes, batched (group_batch.go); a data frame carries its
// sender's clock too, so it acknowledges everything its sender received.
type lamportOrder struct {
	fifoOrder
	clock  uint64        // this member's clock (kept across views)
	clk    []uint64      // per member, the highest clock it has shown
	clkSeq []uint64      // ... and how many of its own messages it had sent then
	heads  []lamportHead // deliver's scratch
}

func newLamport(g *Group) totalOrder { return &lamportOrder{fifoOrder: fifoOrder{g: g}} }

func (o *lamportOrder) reset(n int) { o.clk, o.clkSeq = make([]uint64, n), make([]uint64, n) }

func (o *lamportOrder) onSend(me int, it *mcast.Item) {
	o.clock++ // Tanenbaum ch. 6: a send is an event
	it.TS = o.clock
	o.g.ts[Stamp{o.g.cfg.ID, it.Seq}] = it.TS
}

func (o *lamportOrder) sent() {
	if !o.g.cfg.Safe {
		// The data carries this member's clock, past every message it
		// received: it acknowledges them all (Tanenbaum ch. 6, an
		// acknowledgement is any message with a later time).
		o.g.batch.ack = false
	}
}

func (o *lamportOrder) stored(j int, it mcast.Item) {
	// Tanenbaum ch. 6: a receiver's clock moves past the message's time.
	o.g.ts[Stamp{it.Sender, it.Seq}] = it.TS
	o.clock = max(o.clock, it.TS) + 1
	o.showClock(j, it.TS, it.Seq)
}

// ackData: Tanenbaum ch. 6, the receiver acknowledges to everyone.
func (o *lamportOrder) ackData() bool { return true }

func (o *lamportOrder) onStatus(from node.ID, i int, m Msg) bool {
	if len(m.Recv) != len(o.g.view.Members) {
		return false
	}
	o.showClock(i, m.Clock, m.Recv[i])
	return true
}

func (o *lamportOrder) statusClock() uint64 { return o.clock }

func (o *lamportOrder) status(st *Status) { st.Clock = o.clock }

// showClock records that member j's clock reached c when it had sent seq
// messages: its later messages carry times above c.
func (o *lamportOrder) showClock(j int, c, seq uint64) {
	if c > o.clk[j] {
		o.clk[j], o.clkSeq[j] = c, seq
	}
}

// head is the undelivered message least in (time, sender) order among
// each member's next one, if any. deliver keeps each member's next
// time in heads (headTS) and looks up again only the member whose
// message it delivered: not n map lookups per message.
func (o *lamportOrder) head() (j int, q, ts uint64, ok bool) {
	g := o.g
	for k, m := range g.view.Members {
		if !o.heads[k].ok {
			continue
		}
		t := o.heads[k].ts
		if !ok || t < ts || t == ts && m.ID < g.view.Members[j].ID {
			j, q, ts, ok = k, g.deliv[k]+1, t, true
		}
	}
	return
}

// headTS looks up member k's next undelivered message's time.
func (o *lamportOrder) headTS(k int) {
	g := o.g
	h := &o.heads[k]
	h.ok = g.deliv[k] < g.recv[k]
	if h.ok {
		h.ts = g.ts[Stamp{g.view.Members[k].ID, g.deliv[k] + 1}]
	}
}

// deliverable: every other member has either a later message queued
// here, or shown a clock at or past ts with every message it had sent by
// then received here; so nothing earlier in the order can still come
// (Tanenbaum ch. 6: the head is acknowledged by everyone).
func (o *lamportOrder) deliverable(j int, ts uint64) bool {
	g := o.g
	if g.cfg.bug == bugLamportNoAck {
		return true
	}
	for k, m := range g.view.Members {
		if k == j || m.ID == g.cfg.ID || g.deliv[k] < g.recv[k] {
			continue
		}
		if o.clk[k] < ts || g.recv[k] < o.clkSeq[k] {
			return false
		}
	}
	return true
}

func (o *lamportOrder) deliver() {
	g := o.g
	n := len(g.view.Members)
	if cap(o.heads) < n {
		o.heads = make([]lamportHead, n)
	}
	o.heads = o.heads[:n]
	for k := range o.heads {
		o.headTS(k)
	}
	for {
		j, q, ts, ok := o.head()
		if !ok || !o.deliverable(j, ts) || !g.safe(j, q) || g.backlogged() {
			return
		}
		g.deliverOne(j, q)
		o.headTS(j)
	}
}

// lamportHead is a member's next undelivered message in deliver: ok
// (there is one) and its time.
type lamportHead struct {
	ts uint64
	ok bool
}

// finish: what a member delivered is a prefix of the view's messages in
// (time, sender) order (it delivered m only with every earlier one
// here), so the rest of the cut goes in that order too.
func (o *lamportOrder) finish(c *Change) {
	g := o.g
	var rest []Stamp
	for j, m := range g.view.Members {
		for q := g.deliv[j] + 1; q <= c.Cut[j] && q <= g.recv[j]; q++ {
			rest = append(rest, Stamp{m.ID, q})
		}
	}
	slices.SortFunc(rest, func(a, b Stamp) int {
		if c := cmp.Compare(g.ts[a], g.ts[b]); c != 0 {
			return c
		}
		return cmp.Compare(a.Sender, b.Sender)
	})
	for _, st := range rest {
		g.deliverOne(g.pos[st.Sender], st.Seq)
	}
}
