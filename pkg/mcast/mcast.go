package mcast

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Order is a delivery guarantee.
type Order uint8

const (
	Unordered Order = 1 // reliable: integrity, validity, agreement
	FIFO      Order = 2 // reliable, and each sender's messages in the order sent
	Causal    Order = 3 // reliable, and in happens-before order
)

func (o Order) String() string {
	switch o {
	case Unordered:
		return "unordered"
	case FIFO:
		return "fifo"
	case Causal:
		return "causal"
	}
	return fmt.Sprintf("order(%d)", uint8(o))
}

// ParseOrder parses "unordered", "fifo" or "causal".
func ParseOrder(s string) (Order, error) {
	for _, o := range []Order{Unordered, FIFO, Causal} {
		if o.String() == s {
			return o, nil
		}
	}
	return 0, fmt.Errorf("mcast: unknown order %q (want unordered, fifo or causal)", s)
}

// Config configures a Machine. Zero values mean the default.
type Config struct {
	ID    node.ID
	Peers []node.ID // the group, this process included; identical on every member
	Order Order     // default FIFO
	// Period is how often a member sends its digest to every other
	// member. Default 50ms.
	Period time.Duration
	// Suspect is the silence after which a member no longer counts for
	// "delivered by all" (StableEvent). Default 20·Period.
	Suspect time.Duration
	// Window bounds the own messages sent eagerly beyond what every
	// member has acknowledged (default 4096); later ones go out as the
	// digests ask for them. Four windows unacknowledged refuse sends
	// (ErrFull) until a RoomEvent.
	Window int
	// Keep bounds the messages held for members that have not
	// acknowledged them (default 65536). Past it, messages that every
	// unsuspected member has are dropped even if a suspected one lacks
	// them; counted as "abandoned".
	Keep int
	// Backlog bounds the deliveries (and own sends) handed to the runner
	// and not yet written out, as the sum of their Cost (0: no bound).
	// The runner reports what it wrote with MsgWritten. At the bound the
	// member delivers nothing more, refuses its own sends (ErrFull) and
	// stores no new message, so its digests stop acknowledging and the
	// senders' windows fill: the group slows to what this member's reader
	// takes, while the digests go on and nobody suspects it.
	Backlog int

	bug bug // planted bugs, tests only
}

type bug uint8

const (
	bugEarly   bug = 1 + iota // FIFO: deliver from the hold-back queue one step early
	bugNoMerge                // causal: deliver without checking the other vector entries
	bugNoRelay                // retransmit only one's own messages
)

// DeliverEvent is one delivery. Text form: "<sender> <seq> <payload>".
type DeliverEvent struct {
	Event   string   `json:"event"` // "deliver"
	Sender  node.ID  `json:"sender"`
	Seq     uint64   `json:"seq"`
	VT      []uint64 `json:"vt,omitempty"`
	Payload []byte   `json:"payload"`
}

func (e DeliverEvent) Kind() string { return "deliver" }
func (e DeliverEvent) String() string {
	return fmt.Sprintf("%d %d %s", e.Sender, e.Seq, e.Payload)
}

// SendEvent records one of this member's own multicasts, in order: with
// the deliveries it lets a checker rebuild happens-before.
type SendEvent struct {
	Event   string   `json:"event"` // "send"
	Seq     uint64   `json:"seq"`
	VT      []uint64 `json:"vt,omitempty"`
	Payload []byte   `json:"payload"`
}

func (e SendEvent) Kind() string   { return "send" }
func (e SendEvent) String() string { return fmt.Sprintf("send %d", e.Seq) }

// DoneEvent: this member's input has ended, and every member it does not
// suspect has ended its input too, delivered everything this member
// delivered (its own messages included), and has nothing this member has
// not delivered. A runner may exit then without costing anyone agreement.
type DoneEvent struct {
	Event string `json:"event"` // "done"
	Sent  uint64 `json:"sent"`
}

func (e DoneEvent) Kind() string   { return "done" }
func (e DoneEvent) String() string { return fmt.Sprintf("done after %d", e.Sent) }

// FrameBudget bounds the payload bytes of one data frame (of the fixed
// group's and of pkg/mcast/group's).
const FrameBudget = 48 << 10

const budget = FrameBudget

// Machine is one member's multicast state. Create it with New; the runner
// calls Tick once at start.
type Machine struct {
	cfg   Config
	peers []node.ID // sorted, self included
	idx   map[node.ID]int
	me    int

	seq   uint64
	store []seqStore        // per sender: received, not yet stable (store.go)
	gc    []uint64          // per sender: every seq up to this is out of store
	recv  []uint64          // per sender: received without a gap
	deliv []uint64          // per sender: delivered without a gap (causal: V_i)
	high  []uint64          // per sender: the highest seq received
	done  []map[uint64]bool // unordered: delivered beyond deliv

	peerRecv, peerDeliv [][]uint64
	heard               []time.Time
	nextDigest          time.Time
	nak                 map[node.ID]bool // digest owed now (new data, or a gap)
	final               uint64           // 0 while input is open, then seq+1
	endedAt             time.Time
	peerFinal           []uint64
	isDone              bool
	full                bool      // a send was refused with ErrFull
	started             time.Time // first Tick
	now                 time.Time // of the current Step or Tick
	held                int
	stats               map[string]uint64
	emitted, written    uint64 // Cost of the deliveries handed out, and written by the runner

	out    []node.Envelope[Msg]
	events []node.Event
}

// New returns a Machine.
func New(cfg Config) (*Machine, error) {
	if cfg.ID == node.None || !slices.Contains(cfg.Peers, cfg.ID) {
		return nil, fmt.Errorf("mcast: id %d is not in the group", cfg.ID)
	}
	if len(cfg.Peers) > maxMembers {
		return nil, fmt.Errorf("mcast: %d members exceed %d", len(cfg.Peers), maxMembers)
	}
	if cfg.Order == 0 {
		cfg.Order = FIFO
	}
	if cfg.Order > Causal {
		return nil, errors.New("mcast: unknown order")
	}
	if cfg.Period <= 0 {
		cfg.Period = 50 * time.Millisecond
	}
	if cfg.Suspect <= 0 {
		cfg.Suspect = 20 * cfg.Period
	}
	if cfg.Keep <= 0 {
		cfg.Keep = 65536
	}
	if cfg.Window <= 0 {
		cfg.Window = 4096
	}
	peers := slices.Clone(cfg.Peers)
	slices.Sort(peers)
	peers = slices.Compact(peers)
	n := len(peers)
	m := &Machine{cfg: cfg, peers: peers, idx: map[node.ID]int{}, store: make([]seqStore, n), gc: make([]uint64, n),
		recv: make([]uint64, n), high: make([]uint64, n), deliv: make([]uint64, n), done: make([]map[uint64]bool, n),
		peerRecv: make([][]uint64, n), peerDeliv: make([][]uint64, n), heard: make([]time.Time, n), peerFinal: make([]uint64, n),
		nak: map[node.ID]bool{}, stats: map[string]uint64{}}
	for i, p := range peers {
		m.idx[p] = i
		m.store[i], m.done[i] = newSeqStore(), map[uint64]bool{}
	}
	m.me = m.idx[cfg.ID]
	return m, nil
}

// Stats returns the counters: sent, delivered, duplicates, retransmitted,
// abandoned.
func (m *Machine) Stats() map[string]uint64 { return m.stats }

// Status describes the machine for status queries.
func (m *Machine) Status() any {
	return map[string]any{"id": m.cfg.ID, "order": m.cfg.Order.String(), "sent": m.seq, "received": m.recv,
		"delivered": m.deliv, "held": m.held, "counters": m.stats}
}

// Step implements node.Machine.
func (m *Machine) Step(now time.Time, in node.Envelope[Msg]) error {
	m.now = now
	msg := in.Msg
	if in.From == m.cfg.ID {
		switch {
		case msg.Type == MsgEnd:
			if m.final == 0 {
				m.final, m.endedAt = m.seq+1, now
				m.nextDigest = now // tell everyone at once
			}
			m.checkDone(now)
			return nil
		case msg.Type == MsgWritten:
			was := m.backlogged()
			m.written = max(m.written, msg.Written)
			if was && !m.backlogged() {
				m.deliver()
				// Tell everyone at once: what was refused meanwhile comes
				// again a round trip from now, not a Period.
				for _, p := range m.peers {
					if p != m.cfg.ID {
						m.nak[p] = true
					}
				}
				m.room(now)
			}
			return nil
		case msg.Type == MsgSend && len(msg.Items) >= 1 && len(msg.Items) <= maxBatch && m.final == 0:
			for _, it := range msg.Items {
				if limit := PayloadLimit(m.cfg.Order, len(m.peers)); len(it.Payload) > limit {
					return fmt.Errorf("mcast: a message of %d bytes exceeds %d", len(it.Payload), limit)
				}
			}
			if m.seq-m.acked(now) >= 4*uint64(m.cfg.Window) || m.backlogged() {
				m.full = true
				return ErrFull
			}
			var eager []Item
			for _, it := range msg.Items {
				if item, eagerOK := m.send(now, it.Payload); eagerOK {
					eager = append(eager, item)
				}
			}
			m.broadcast(eager)
			return nil
		}
		return fmt.Errorf("mcast: %v is not a local request here", msg.Type)
	}
	q, ok := m.idx[in.From]
	if !ok {
		return fmt.Errorf("mcast: message from %d, not in the group", in.From)
	}
	m.heard[q] = now
	switch msg.Type {
	case MsgData:
		if m.backlogged() {
			// Flow control: the reader is behind. Nothing stored is
			// nothing acknowledged; the senders send it again later.
			m.stats["refused"] += uint64(len(msg.Items))
			return nil
		}
		before := m.stats["received"]
		for _, it := range msg.Items {
			if err := m.receive(in.From, it); err != nil {
				return err
			}
		}
		if m.stats["received"] > before {
			// Acknowledge at once: the digest opens the sender's window
			// (and repairs) without waiting for the next Period.
			m.nak[in.From] = true
		}
		m.deliver()
	case MsgDigest:
		if len(msg.Recv) != len(m.peers) || len(msg.Deliv) != len(m.peers) {
			return fmt.Errorf("mcast: digest from %d for %d members, the group has %d (are the peer lists identical?)",
				in.From, len(msg.Recv), len(m.peers))
		}
		m.peerRecv[q], m.peerDeliv[q], m.peerFinal[q] = msg.Recv, msg.Deliv, msg.Final
		if len(msg.High) != 0 && len(msg.High) != len(m.peers) {
			return fmt.Errorf("mcast: digest from %d with %d high marks for %d members", in.From, len(msg.High), len(m.peers))
		}
		m.retransmit(in.From, msg.Recv, msg.High)
		m.room(now)
		m.collect()
		m.checkDone(now)
	default:
		return fmt.Errorf("mcast: unexpected %v from %d", msg.Type, in.From)
	}
	return nil
}

// maxBatch is the most lines one MsgSend request may carry.
const maxBatch = 1024

// send multicasts payload: numbered, timestamped (causal: V_i[i] + 1, the
// seed's "increment state of i", then the whole vector), delivered here at
// once (validity), and sent to every other member.
func (m *Machine) send(now time.Time, payload []byte) (Item, bool) {
	m.seq++
	it := Item{Sender: m.cfg.ID, Seq: m.seq, Payload: payload}
	if m.cfg.Order == Causal {
		it.VT = slices.Clone(m.deliv)
		it.VT[m.me] = m.seq
	}
	m.stats["sent"]++
	m.emitted += Cost(payload)
	m.events = append(m.events, SendEvent{Event: "send", Seq: it.Seq, VT: it.VT, Payload: payload})
	m.store[m.me].put(it) // above everything collected: a new seq
	m.held++
	m.recv[m.me], m.high[m.me] = m.seq, m.seq
	m.deliver()
	if m.seq-m.acked(now) > uint64(m.cfg.Window) {
		// Past the window the message waits for the digests: each member
		// gets it when it asks, at the pace it can take.
		m.stats["deferred"]++
		return it, false
	}
	return it, true
}

// broadcast sends items to every other member, as few frames as fit.
func (m *Machine) broadcast(items []Item) {
	for len(items) > 0 {
		n, size := 0, 0
		for n < len(items) && n < maxItems {
			cost := len(items[n].Payload) + 16 + 4*len(items[n].VT)
			if n > 0 && size+cost > budget {
				break
			}
			size += cost
			n++
		}
		for _, p := range m.peers {
			if p != m.cfg.ID {
				m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: p, Msg: Msg{Type: MsgData, Items: items[:n]}})
			}
		}
		for _, it := range items[:n] {
			if sl := m.store[m.me].at(it.Seq); sl != nil {
				sl.sent = m.now
			}
		}
		items = items[n:]
	}
}

// ErrFull is a send refused because this member holds too many of its own
// messages that some member has not acknowledged (4·Window): the sender
// waits for a RoomEvent.
var ErrFull = errors.New("mcast: too many messages not yet acknowledged")

// RoomEvent: sends are accepted again after ErrFull.
type RoomEvent struct {
	Event string `json:"event"` // "room"
}

func (e RoomEvent) Kind() string   { return "room" }
func (e RoomEvent) String() string { return "room" }

// room lets a refused sender try again once half the window is free and
// the reader has caught up.
func (m *Machine) room(now time.Time) {
	if m.full && m.seq-m.acked(now) < 2*uint64(m.cfg.Window) && !m.backlogged() {
		m.full = false
		m.events = append(m.events, RoomEvent{Event: "room"})
	}
}

// Cost is what one delivery of payload counts against a Backlog: its
// bytes and a fixed share for the line around them.
func Cost(payload []byte) uint64 { return uint64(len(payload)) + 32 }

// backlogged: the runner has not written out Backlog's worth of what it
// was handed.
func (m *Machine) backlogged() bool {
	return m.cfg.Backlog > 0 && m.emitted-m.written >= uint64(m.cfg.Backlog)
}

// aheadMax is how far beyond what it received without a gap a member
// stores a sender's message: 8·Window. A sender keeps at most 4·Window
// of its own beyond what every member it has not suspected received
// (Step, ErrFull), so only a member it suspected, or a forged frame, is
// sent further; what is not stored comes again, in order, once the gap
// before it is repaired. It bounds the store's slots (store.go).
func (m *Machine) aheadMax() uint64 { return 8 * uint64(m.cfg.Window) }

// acked is how many of its own messages every unsuspected member has
// received.
func (m *Machine) acked(now time.Time) uint64 {
	a := m.seq
	for q := range m.peers {
		if q == m.me || m.suspected(q, now) {
			continue
		}
		if m.peerRecv[q] == nil {
			return 0
		}
		a = min(a, m.peerRecv[q][m.me])
	}
	return a
}

// receive stores a message (its first copy), whoever relayed it.
func (m *Machine) receive(from node.ID, it Item) error {
	s, ok := m.idx[it.Sender]
	if !ok {
		return fmt.Errorf("mcast: message of %d, not in the group", it.Sender)
	}
	if m.cfg.Order == Causal && len(it.VT) != len(m.peers) || m.cfg.Order == Causal && it.VT[s] != it.Seq {
		return fmt.Errorf("mcast: %d/%d from %d without a vector timestamp for %d members", it.Sender, it.Seq, from, len(m.peers))
	}
	if it.Seq <= m.recv[s] || m.store[s].at(it.Seq) != nil {
		m.stats["duplicates"]++
		return nil
	}
	if it.Seq-m.recv[s] > m.aheadMax() {
		// Further ahead than any sender goes of a member it hears
		// (aheadMax): not stored, and whoever sent it hears at once
		// what we have; retransmission brings it again in order.
		m.stats["ahead"]++
		m.nak[from] = true
		return nil
	}
	if !m.store[s].put(it) {
		m.stats["duplicates"]++
		return nil
	}
	m.held++
	m.stats["received"]++
	m.high[s] = max(m.high[s], it.Seq)
	if it.Seq == m.recv[s]+1 {
		m.recv[s]++
		for m.store[s].at(m.recv[s]+1) != nil {
			m.recv[s]++
		}
	} else {
		m.nak[from] = true // a gap: tell whoever sent this what we have
	}
	return nil
}

// deliver delivers everything the order allows.
func (m *Machine) deliver() {
	for progress := true; progress; {
		progress = false
		for s := range m.peers {
			switch m.cfg.Order {
			case Unordered:
				st := &m.store[s]
				for i := range st.slots {
					if m.backlogged() {
						return
					}
					sl := &st.slots[i]
					if seq := sl.it.Seq; sl.held && seq > m.deliv[s] && !m.done[s][seq] {
						m.emit(s, sl.it)
						m.done[s][seq] = true
						for m.done[s][m.deliv[s]+1] {
							delete(m.done[s], m.deliv[s]+1)
							m.deliv[s]++
						}
					}
				}
			case FIFO:
				// Nita-Rotaru's CS7610 notes: deliver when S = R + 1; hold back when S > R + 1.
				for !m.backlogged() {
					it, ok := m.store[s].get(m.deliv[s] + 1)
					if !ok && m.cfg.bug == bugEarly {
						it, ok = m.store[s].get(m.deliv[s] + 2)
					}
					if !ok {
						break
					}
					m.emit(s, it)
					m.deliv[s] = it.Seq
					progress = true
				}
			case Causal:
				// Nita-Rotaru's CS7610 notes: deliver when V_j[j] = V_i[j] + 1 and V_j[k] ≤ V_i[k]
				// for every k ≠ j; then V_i[j] + 1.
				for !m.backlogged() {
					it, ok := m.store[s].get(m.deliv[s] + 1)
					if !ok || !m.causallyReady(s, it) {
						break
					}
					m.emit(s, it)
					m.deliv[s]++
					progress = true
				}
			}
		}
	}
}

func (m *Machine) causallyReady(s int, it Item) bool {
	if m.cfg.bug == bugNoMerge {
		return true
	}
	for k, v := range it.VT {
		if k != s && v > m.deliv[k] {
			return false
		}
	}
	return true
}

func (m *Machine) emit(s int, it Item) {
	m.stats["delivered"]++
	if s == m.me {
		return // own messages: the SendEvent stands for their delivery
	}
	m.emitted += Cost(it.Payload)
	m.events = append(m.events, DeliverEvent{Event: "deliver", Sender: it.Sender, Seq: it.Seq, VT: it.VT, Payload: it.Payload})
}

// retransmit sends q what it lacks of what we hold: anyone's messages, so
// that a message some members got before its sender crashed still reaches
// the rest (agreement).
func (m *Machine) retransmit(q node.ID, theirs, theirHigh []uint64) {
	var items []Item
	size := 0
	for s := range m.peers {
		if m.cfg.bug == bugNoRelay && s != m.me {
			continue
		}
		// From the first message q lacks up to the highest we hold, by
		// lookup: the cost is the frame's, not the store's.
		for seq, looked := theirs[s]+1, 0; seq <= m.high[s] && looked < 4*maxItems; seq, looked = seq+1, looked+1 {
			sl := m.store[s].at(seq)
			if sl == nil {
				continue
			}
			it := sl.it
			if !sl.sent.IsZero() && m.now.Sub(sl.sent) < m.cfg.Period && (theirHigh == nil || seq > theirHigh[s]) {
				// Sent lately and nothing later has reached q: probably in
				// flight, not lost. Resent if still missing a Period on.
				if s == m.me && theirHigh != nil {
					// Our own later ones went out later still: all in
					// flight (one sent long ago and lost since waits at
					// most a Period more).
					break
				}
				continue
			}
			cost := len(it.Payload) + 16 + 4*len(it.VT)
			if len(items) > 0 && size+cost > budget || len(items) == maxItems {
				// The first always goes: a message near MaxPayload is
				// over budget alone, and fits a frame alone.
				break
			}
			size += cost
			items = append(items, it)
			sl.sent = m.now
		}
	}
	if len(items) > 0 {
		m.stats["retransmitted"] += uint64(len(items))
		m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: q, Msg: Msg{Type: MsgData, Items: items}})
	}
}

// suspected: q has been silent for Suspect (never heard of: Suspect since
// this member started).
func (m *Machine) suspected(q int, now time.Time) bool {
	if q == m.me {
		return false
	}
	if m.heard[q].IsZero() {
		return !m.started.IsZero() && now.Sub(m.started) > m.cfg.Suspect
	}
	return now.Sub(m.heard[q]) > m.cfg.Suspect
}

// collect forgets messages every member has received (and this one has
// delivered); past Keep, members that are suspected stop holding them back.
func (m *Machine) collect() {
	for _, lenient := range []bool{false, true} {
		if lenient && m.held <= m.cfg.Keep {
			return
		}
		now := m.lastHeard()
		for s := range m.peers {
			stable := m.deliv[s]
			for q := range m.peers {
				if q == m.me {
					continue
				}
				if lenient && m.suspected(q, now) {
					continue
				}
				if m.peerRecv[q] == nil {
					stable = 0
					break
				}
				stable = min(stable, m.peerRecv[q][s])
			}
			// Everything up to stable goes; nothing at or below m.gc[s] is
			// stored again (it is at or below recv), so only the newly
			// stable numbers are looked at, not the whole store.
			if stable > m.gc[s] {
				n := m.store[s].drop(stable)
				m.held -= n
				if lenient {
					m.stats["abandoned"] += uint64(n)
				}
			}
			m.gc[s] = max(m.gc[s], stable)
		}
	}
}

func (m *Machine) lastHeard() time.Time {
	var t time.Time
	for _, h := range m.heard {
		if h.After(t) {
			t = h
		}
	}
	return t
}

// checkDone emits DoneEvent once this member's input has ended and every
// unsuspected member has ended its input, delivered all this member has,
// and holds nothing this member has not delivered.
func (m *Machine) checkDone(now time.Time) {
	if m.isDone || m.final == 0 {
		return
	}
	for q := range m.peers {
		// A member counts as gone only if it stayed silent through a whole
		// Suspect after our input ended: one cut off by a partition that
		// has just healed is heard again before that.
		if q == m.me || m.suspected(q, now) && now.Sub(m.endedAt) > m.cfg.Suspect {
			continue
		}
		if m.peerDeliv[q] == nil || m.peerFinal[q] == 0 || m.deliv[q] < m.peerFinal[q]-1 {
			return
		}
		for s := range m.peers {
			// Everyone the same: received and delivered alike. (Causal
			// order can hold a received message back for good, when what
			// it depends on died with its sender and every member that
			// had it: then nobody delivers it, and agreement holds.)
			if m.peerDeliv[q][s] != m.deliv[s] || m.peerRecv[q][s] != m.recv[s] {
				return
			}
		}
	}
	m.isDone = true
	m.events = append(m.events, DoneEvent{Event: "done", Sent: m.seq})
}

// Tick implements node.Machine: digests every Period, and at once to a
// member whose message showed a gap.
func (m *Machine) Tick(now time.Time) {
	m.now = now
	if m.started.IsZero() {
		m.started = now
	}
	digest := Msg{Type: MsgDigest, Recv: slices.Clone(m.recv), Deliv: slices.Clone(m.deliv), High: slices.Clone(m.high), Final: m.final}
	if !now.Before(m.nextDigest) {
		m.nextDigest = now.Add(m.cfg.Period)
		for _, p := range m.peers {
			if p != m.cfg.ID {
				m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: p, Msg: digest})
			}
		}
		clear(m.nak)
		m.checkDone(now)
	}
}

// Ready implements node.Machine.
func (m *Machine) Ready() node.Ready[Msg] {
	if len(m.nak) > 0 {
		digest := Msg{Type: MsgDigest, Recv: slices.Clone(m.recv), Deliv: slices.Clone(m.deliv), High: slices.Clone(m.high), Final: m.final}
		for _, p := range slices.Sorted(maps.Keys(m.nak)) {
			m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: p, Msg: digest})
		}
		clear(m.nak)
	}
	r := node.Ready[Msg]{Msgs: m.out, Events: m.events, Wake: m.nextDigest}
	m.out, m.events = nil, nil
	return r
}
