package group

import (
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"strings"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Total is how a Group orders deliveries across senders: one of the orders
// registered in orders, each a type of its own file behind totalOrder.
type Total uint8

// TotalNone: FIFO per sender, no order across senders (fifoOrder).
const TotalNone Total = 0

// totalOrder is one way of ordering a Group's deliveries across senders:
// the hooks the group calls where the orders differ. The group keeps
// what every order shares (the view, the store of messages, what each
// member received, retransmission, view changes and their cuts, the
// batch of order frames, safe delivery's statuses); an order keeps its
// own state, reset with each view. Every hook runs inside Step or Tick,
// so an order is as deterministic as the group.
//
// fifoOrder is the default of every hook (FIFO per sender, nothing
// across senders): an order embeds it, or positions (a list of positions,
// as the sequencer's and TOTEM's), and overrides what it changes.
type totalOrder interface {
	// stamping: the order is a list of positions (Group.stamps), and what
	// was delivered is kept per message (Group.delivered), not as a
	// prefix per sender (Group.deliv).
	stamping() bool
	// reset: a view of n members was installed; per-view state starts
	// over. start runs after the view's event is out, before the queue
	// is flushed (TOTEM's leader makes the token there).
	reset(n int)
	start()

	// maySend: this member may multicast now (TOTEM: it holds the token).
	maySend() bool
	// waiting: messages are queued and maySend said no (TOTEM: this
	// member may ask the leader to stop holding the token).
	waiting()
	// onSend: own message it (numbered it.Seq; me is this member's
	// position in the view) is about to go out; the order may stamp it.
	// sent runs once a batch of own messages went out.
	onSend(me int, it *mcast.Item)
	sent()
	// ride is what rides on a data frame of size bytes to each of to
	// (nil: nothing); rode takes what rode on member i's data frame.
	ride(size int, to []node.ID) [][]PrioItem
	rode(from node.ID, i int, prios []PrioItem)

	// stored: the first copy of it, from member j, was stored.
	// received: j's messages from..to are now held without a gap.
	stored(j int, it mcast.Item)
	received(j int, from, to uint64)
	// ackData: new data is acknowledged to everyone (a status to every
	// member, batched). ctrlOnData: new data gives the order frames to
	// send in the next batch.
	ackData() bool
	ctrlOnData() bool
	// frame handles the order's own frames (MsgToken, MsgHoldCancel,
	// MsgOrder, MsgPrio, MsgFinal) from member i of the view.
	frame(from node.ID, i int, m Msg)
	// onStatus: member i's status m came; true when it may let
	// deliveries go (before its Recv is recorded).
	onStatus(from node.ID, i int, m Msg) bool
	// sendBatch sends the order's frames of a batch (group_batch.go);
	// acks sends the acknowledgements waiting, in the order's place.
	sendBatch(acks func())

	// beat runs with each heartbeat, tick with each Tick in a view.
	beat()
	tick()
	// slowBeat: outside view changes, heartbeats go every 2·Period (a
	// token carries what they say).
	slowBeat() bool
	// statusClock is the Clock a status carries; finals the agreed
	// priorities a status, an answer or a heartbeat's snapshot carries
	// (a copy); agreed the same, not copied, for covers (nil for both:
	// the order has none).
	statusClock() uint64
	finals() []uint64
	agreed() []uint64

	// deliver delivers what the order allows (not called while a view
	// change is under way); safe reports whether message q of member j
	// may be delivered under safe delivery; finish delivers the rest of
	// the cut of c, the same at every survivor.
	deliver()
	safe(j int, q uint64) bool
	finish(c *Change)
	// status fills the order's fields of a status query.
	status(st *Status)
}

// orders is the registration table: a Total, its name (the CLI's
// --total), what it does in a line, and its constructor. A new order is a
// file with its type and one entry here.
var orders = []struct {
	total   Total
	name    string
	summary string
	make    func(g *Group) totalOrder
}{
	{TotalNone, "none", "FIFO per sender, no order across senders", func(g *Group) totalOrder { return &fifoOrder{g: g} }},
	{TotalSequencer, "sequencer", "the view's leader numbers every message", newSequencer},
	{TotalLamport, "lamport", "Lamport times, acknowledged by everyone", newLamport},
	{TotalISIS, "isis", "priorities proposed by every member, agreed by the sender", newISIS},
	{TotalTotem, "totem", "a token goes round; its holder numbers what it sends", newTotem},
}

func (t Total) String() string {
	for _, o := range orders {
		if o.total == t {
			return o.name
		}
	}
	return fmt.Sprintf("total(%d)", uint8(t))
}

// newOrder is the order cfg names (false: none registered).
func newOrder(g *Group) (totalOrder, bool) {
	for _, o := range orders {
		if o.total == g.cfg.Total {
			return o.make(g), true
		}
	}
	return nil, false
}

// ParseTotal is the total order of a name (a --total), among TotalNames.
func ParseTotal(name string) (Total, bool) {
	for _, o := range orders {
		if o.total != TotalNone && o.name == name {
			return o.total, true
		}
	}
	return 0, false
}

// TotalNames are the names of the total orders, as ParseTotal takes them.
func TotalNames() []string {
	var names []string
	for _, o := range orders {
		if o.total != TotalNone {
			names = append(names, o.name)
		}
	}
	return names
}

// TotalUsage describes the total orders in a sentence: "a (what it
// does), b (...) or c (...)".
func TotalUsage() string {
	var s []string
	for _, o := range orders {
		if o.total != TotalNone {
			s = append(s, fmt.Sprintf("%s (%s)", o.name, o.summary))
		}
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// fifoOrder is TotalNone, and every hook's default: each sender's
// messages in their order (the seed's FIFO), nothing across senders.
type fifoOrder struct{ g *Group }

func (o *fifoOrder) stamping() bool                             { return false }
func (o *fifoOrder) reset(n int)                                {}
func (o *fifoOrder) start()                                     {}
func (o *fifoOrder) maySend() bool                              { return true }
func (o *fifoOrder) waiting()                                   {}
func (o *fifoOrder) onSend(me int, it *mcast.Item)              {}
func (o *fifoOrder) sent()                                      {}
func (o *fifoOrder) ride(size int, to []node.ID) [][]PrioItem   { return nil }
func (o *fifoOrder) rode(from node.ID, i int, prios []PrioItem) {}
func (o *fifoOrder) stored(j int, it mcast.Item)                {}
func (o *fifoOrder) received(j int, from, to uint64)            {}
func (o *fifoOrder) ackData() bool                              { return o.g.cfg.Safe }
func (o *fifoOrder) ctrlOnData() bool                           { return false }
func (o *fifoOrder) frame(from node.ID, i int, m Msg)           {}
func (o *fifoOrder) onStatus(from node.ID, i int, m Msg) bool   { return false }
func (o *fifoOrder) sendBatch(acks func())                      { acks() }
func (o *fifoOrder) beat()                                      {}
func (o *fifoOrder) tick()                                      {}
func (o *fifoOrder) slowBeat() bool                             { return false }
func (o *fifoOrder) statusClock() uint64                        { return 0 }
func (o *fifoOrder) finals() []uint64                           { return nil }
func (o *fifoOrder) agreed() []uint64                           { return nil }
func (o *fifoOrder) status(st *Status)                          {}
func (o *fifoOrder) safe(j int, q uint64) bool                  { return o.g.heldByAll(j, q) }

// deliver: each sender's next message as soon as it is held (and safe).
func (o *fifoOrder) deliver() {
	g := o.g
	for j := range g.view.Members {
		for g.deliv[j] < g.recv[j] && g.safe(j, g.deliv[j]+1) && !g.backlogged() {
			g.deliverOne(j, g.deliv[j]+1)
		}
	}
}

// finish delivers the rest of the cut by sender and number.
func (o *fifoOrder) finish(c *Change) {
	g := o.g
	for j := range g.view.Members {
		for g.deliv[j] < c.Cut[j] && g.deliv[j] < g.recv[j] {
			g.deliverOne(j, g.deliv[j]+1)
		}
	}
}
