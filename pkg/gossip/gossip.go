package gossip

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Config configures a Machine. Zero values mean the default.
type Config struct {
	ID    node.ID
	Peers []node.ID // the group, this process included
	// Fanout is how many random peers each round's push goes to; default
	// ⌈ln n⌉ + 1, the fanout at which an infection reaches everyone with
	// high probability (Eugster et al., lpbcast).
	Fanout int
	// Period is the length of a round: one push and one pull. Default 100ms.
	Period time.Duration
	// TTL is how many rounds an event is pushed on after a process first
	// gets it; default ⌈log₂ n⌉ + 2.
	TTL int
	// Buffer bounds the events a process pushes each round (default 256).
	// When more wait, the events with the fewest rounds left are dropped
	// first: they have spread the most. Drops are counted, never silent.
	// Between rounds up to 2·Buffer may wait (the cut is made in batches).
	Buffer int
	// History bounds the events kept to answer pulls (default 4096); the
	// oldest go first. An event every process has evicted can no longer be
	// repaired.
	History int
	// Rand chooses peers. Required.
	Rand *rand.Rand
	// Tree, when set, spreads along a fixed tree instead of to random
	// peers (tree.go): each event goes once over each tree edge, batched
	// per Period, and the pull runs every PullEvery rounds to repair what
	// a cut edge lost. Fewer messages and a bounded path, for groups whose
	// members all know each other.
	Tree bool
	// Branch is the tree's branching factor (default 32: a star up to 33
	// members, two levels up to 1,057).
	Branch int
	// PullEvery is how many rounds pass between pulls in tree mode
	// (default 2); random mode pulls every round.
	PullEvery int
	// View, when above zero, keeps a partial view of that many members
	// instead of the whole group (view.go): Peers are then only the
	// contacts the view starts from (this process need not be among
	// them), pushes and pulls go to members of the view, the view is
	// refreshed by a Cyclon shuffle every round, and messages from any
	// member are accepted. ViewSize(n) gives the default for a group of
	// about n: ⌈3·ln n⌉. Not with Tree.
	View int
	// Shuffle is how many entries a shuffle carries (default ⌈View/2⌉).
	Shuffle int

	// noDedup plants a bug for the checker: deliver every copy. Tests only.
	noDedup bool
	// noPull plants a weakness: no anti-entropy. Tests only.
	noPull bool
	// forgetDropped plants a bug: an event cut from a full push buffer is
	// also forgotten for repair. Tests only.
	forgetDropped bool
	// frozenView plants a bug: the partial view is never shuffled. Tests
	// only.
	frozenView bool
	// dropSelf plants a bug: a shuffle leaves out the sender's own entry.
	// Tests only.
	dropSelf bool
}

// DeliverEvent is one delivered broadcast. Text form: "<origin> <seq> <payload>".
type DeliverEvent struct {
	Event   string  `json:"event"` // "deliver"
	Origin  node.ID `json:"origin"`
	Seq     uint64  `json:"seq"`
	Payload []byte  `json:"payload"`
}

func (e DeliverEvent) Kind() string { return "deliver" }
func (e DeliverEvent) String() string {
	return fmt.Sprintf("%d %d %s", e.Origin, e.Seq, e.Payload)
}

// IdleEvent: every broadcast of this process has been pushed for all its
// rounds. A runner whose input has ended may leave then.
type IdleEvent struct {
	Event string `json:"event"` // "idle"
}

func (e IdleEvent) Kind() string   { return "idle" }
func (e IdleEvent) String() string { return "idle" }

type key struct {
	origin node.ID
	seq    uint64
}

// pushBudget bounds the payload bytes of one push or repair, so that it
// fits a frame with room to spare.
const pushBudget = 48 << 10

// Machine is one process's gossip state. Create it with New; the runner
// calls Tick once at start.
type Machine struct {
	cfg   Config
	peers []node.ID // others

	seq   uint64                      // own broadcasts so far
	next  map[node.ID]uint64          // per origin: every seq below is delivered
	above map[node.ID]map[uint64]bool // delivered seqs at or above next
	buf   []Event                     // being pushed
	fwd   []treeItem                  // tree mode: to forward at the next round
	ticks int                         // rounds so far (tree mode pulls every PullEvery)
	hist  map[key]Event               // kept for repair
	since map[key]time.Time           // when each kept event came (tree mode's edge repair)
	now   time.Time                   // of the current Step or Tick
	asked map[node.ID]time.Time       // tree mode: when we last pulled from a neighbour that was ahead
	order []key                       // hist, oldest first
	round time.Time                   // next round
	busy  bool                        // own broadcasts not yet pushed out
	stats map[string]uint64
	view  []ViewEntry // partial view (Config.View > 0)
	// the shuffle under way: to whom, and the entries sent
	sentTo node.ID
	sent   []ViewEntry

	out    []node.Envelope[Msg]
	events []node.Event
}

// New returns a Machine.
func New(cfg Config) (*Machine, error) {
	if cfg.View > 0 {
		return newViewed(cfg)
	}
	if cfg.ID == node.None || !slices.Contains(cfg.Peers, cfg.ID) {
		return nil, fmt.Errorf("gossip: id %d is not in the group", cfg.ID)
	}
	if cfg.Rand == nil {
		return nil, errors.New("gossip: Config.Rand is required")
	}
	n := len(cfg.Peers)
	if cfg.Fanout <= 0 {
		cfg.Fanout = int(math.Ceil(math.Log(float64(n)))) + 1
	}
	if cfg.Period <= 0 {
		cfg.Period = 100 * time.Millisecond
	}
	if cfg.TTL <= 0 {
		cfg.TTL = int(math.Ceil(math.Log2(float64(n)))) + 2
	}
	cfg.TTL = min(cfg.TTL, 255)
	if cfg.Buffer <= 0 {
		cfg.Buffer = 256
	}
	if cfg.History <= 0 {
		cfg.History = 4096
	}
	if cfg.Branch <= 0 {
		cfg.Branch = 32
	}
	if cfg.PullEvery <= 0 {
		cfg.PullEvery = 2
	}
	m := &Machine{cfg: cfg, next: map[node.ID]uint64{}, above: map[node.ID]map[uint64]bool{},
		hist: map[key]Event{}, since: map[key]time.Time{}, asked: map[node.ID]time.Time{}, stats: map[string]uint64{}}
	for _, p := range cfg.Peers {
		if p != cfg.ID {
			m.peers = append(m.peers, p)
		}
	}
	slices.Sort(m.peers)
	m.peers = slices.Compact(m.peers)
	return m, nil
}

// SetPeers replaces the group (this process stays in it), for a runner
// whose membership changes: ticketd's members learn of each other as
// they come. Events already held are kept.
func (m *Machine) SetPeers(ids []node.ID) {
	if m.cfg.View > 0 {
		m.initView(ids) // contacts fill the free slots
		return
	}
	m.peers = m.peers[:0]
	for _, p := range ids {
		if p != m.cfg.ID && p != node.None {
			m.peers = append(m.peers, p)
		}
	}
	slices.Sort(m.peers)
	m.peers = slices.Compact(m.peers)
}

// Stats returns the machine's counters: delivered, duplicates, dropped
// (buffer full), evicted (history full), pushed, repaired.
func (m *Machine) Stats() map[string]uint64 { return m.stats }

// Status implements the status query.
func (m *Machine) Status() any {
	return map[string]any{"id": m.cfg.ID, "buffer": len(m.buf), "history": len(m.hist), "counters": m.stats}
}

func (m *Machine) has(o node.ID, s uint64) bool {
	if s < m.nextOf(o) {
		return true
	}
	return m.above[o][s]
}

func (m *Machine) nextOf(o node.ID) uint64 {
	if v, ok := m.next[o]; ok {
		return v
	}
	return 1
}

// take delivers ev if it is new, keeps it for repair, and pushes it on for
// ttl more rounds.
func (m *Machine) take(ev Event, ttl uint8) {
	if m.has(ev.Origin, ev.Seq) && !m.cfg.noDedup {
		m.stats["duplicates"]++
		return
	}
	m.stats["delivered"]++
	m.events = append(m.events, DeliverEvent{Event: "deliver", Origin: ev.Origin, Seq: ev.Seq, Payload: ev.Payload})
	// Record: advance the contiguous prefix, or remember the gap-filler.
	nx := m.nextOf(ev.Origin)
	if ev.Seq == nx {
		nx++
		for m.above[ev.Origin][nx] {
			delete(m.above[ev.Origin], nx)
			nx++
		}
		m.next[ev.Origin] = nx
	} else if ev.Seq > nx {
		if m.above[ev.Origin] == nil {
			m.above[ev.Origin] = map[uint64]bool{}
		}
		m.above[ev.Origin][ev.Seq] = true
	}
	k := key{ev.Origin, ev.Seq}
	if _, ok := m.hist[k]; !ok {
		m.hist[k] = Event{Origin: ev.Origin, Seq: ev.Seq, Payload: ev.Payload}
		m.since[k] = m.now
		m.order = append(m.order, k)
		for len(m.order) > m.cfg.History {
			delete(m.hist, m.order[0])
			delete(m.since, m.order[0])
			m.order = m.order[1:]
			m.stats["evicted"]++
		}
	}
	if ttl > 0 {
		m.buf = append(m.buf, Event{Origin: ev.Origin, Seq: ev.Seq, TTL: ttl, Payload: ev.Payload})
		if len(m.buf) >= 2*m.cfg.Buffer {
			m.trim() // amortised: a sort per Buffer events, not per event
		}
	}
}

// trim cuts the push buffer to Buffer, dropping the events with the fewest
// rounds left (stable: the oldest of those first).
func (m *Machine) trim() {
	if len(m.buf) <= m.cfg.Buffer {
		return
	}
	slices.SortStableFunc(m.buf, func(a, b Event) int { return int(b.TTL) - int(a.TTL) })
	m.stats["dropped"] += uint64(len(m.buf) - m.cfg.Buffer)
	if m.cfg.forgetDropped {
		for _, ev := range m.buf[m.cfg.Buffer:] {
			delete(m.hist, key{ev.Origin, ev.Seq})
		}
	}
	m.buf = m.buf[:m.cfg.Buffer]
}

// Step implements node.Machine.
func (m *Machine) Step(now time.Time, in node.Envelope[Msg]) error {
	m.now = now
	msg := in.Msg
	if in.From == m.cfg.ID {
		if msg.Type != MsgBroadcast || len(msg.Events) == 0 || len(msg.Events) > maxEvents {
			return fmt.Errorf("gossip: %v is not a local request", msg.Type)
		}
		for _, ev := range msg.Events {
			if len(ev.Payload) > MaxPayload {
				return fmt.Errorf("gossip: payload of %d bytes exceeds %d", len(ev.Payload), MaxPayload)
			}
		}
		for _, ev := range msg.Events {
			m.seq++
			if m.cfg.Tree {
				m.takeTree(Event{Origin: m.cfg.ID, Seq: m.seq, Payload: ev.Payload}, m.cfg.ID)
				continue
			}
			m.take(Event{Origin: m.cfg.ID, Seq: m.seq, Payload: ev.Payload}, uint8(m.cfg.TTL))
		}
		m.busy = true
		return nil
	}
	if m.cfg.View > 0 {
		switch msg.Type {
		case MsgShuffle:
			m.answerShuffle(in.From, msg.View)
			return nil
		case MsgShuffleReply:
			var sent []ViewEntry
			if in.From == m.sentTo {
				sent, m.sentTo, m.sent = m.sent, node.None, nil
				m.answered(in.From)
			}
			m.merge(msg.View, sent)
			return nil
		}
	} else if msg.Type == MsgShuffle || msg.Type == MsgShuffleReply {
		return fmt.Errorf("gossip: %v from %d, but this member keeps no partial view", msg.Type, in.From)
	}
	if m.cfg.View == 0 && !slices.Contains(m.peers, in.From) {
		return fmt.Errorf("gossip: message from %d, not in the group", in.From)
	}
	switch msg.Type {
	case MsgPush:
		for _, ev := range msg.Events {
			if m.cfg.Tree {
				m.takeTree(ev, in.From)
				continue
			}
			m.take(ev, max(ev.TTL, 1)-1) // one round spent getting here
		}
		if m.cfg.Tree && len(msg.Digest) > 0 {
			// The neighbour's digest rides on its push: send it what it
			// lacks of what we have had for a while (newer events may be
			// on their way to it along the tree).
			m.repair(in.From, msg.Digest, now.Add(-repairAge*m.cfg.Period))
			m.askIfBehind(now, in.From, msg.Digest)
		}
	case MsgRepair:
		for _, ev := range msg.Events {
			if m.cfg.Tree {
				// The tree push this repair overtook will be a duplicate
				// here, so this member forwards it down the tree itself.
				m.takeTree(ev, in.From)
				continue
			}
			m.take(ev, 0) // repaired events are not pushed on
		}
	case MsgDigest:
		m.repair(in.From, msg.Digest, time.Time{})
		if m.cfg.Tree {
			m.askIfBehind(now, in.From, msg.Digest) // push-pull: both sides repaired
		}
	default:
		return fmt.Errorf("gossip: unexpected %v from %d", msg.Type, in.From)
	}
	return nil
}

// repair answers a digest with the kept events the asker lacks, within one
// frame's budget.
func (m *Machine) repair(to node.ID, digest []Have, before time.Time) {
	next := map[node.ID]uint64{}
	for _, h := range digest {
		next[h.Origin] = h.Next
	}
	var evs []Event
	size := 0
	for _, k := range m.order {
		n, ok := next[k.origin]
		if !ok {
			n = 1
		}
		if k.seq < n {
			continue
		}
		if !before.IsZero() && !m.since[k].Before(before) {
			continue
		}
		ev := m.hist[k]
		if size+len(ev.Payload) > pushBudget || len(evs) == maxEvents {
			break
		}
		size += len(ev.Payload)
		evs = append(evs, ev)
	}
	if len(evs) > 0 {
		m.stats["repaired"] += uint64(len(evs))
		m.send(to, Msg{Type: MsgRepair, Events: evs})
	}
}

func (m *Machine) send(to node.ID, msg Msg) {
	m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: to, Msg: msg})
}

// pick returns k distinct random peers (of the partial view, with one).
func (m *Machine) pick(k int) []node.ID {
	if m.cfg.View > 0 {
		var out []node.ID
		for _, e := range m.sample(k, node.None) {
			out = append(out, e.ID)
		}
		return out
	}
	k = min(k, len(m.peers))
	out := make([]node.ID, 0, k)
	for _, i := range m.cfg.Rand.Perm(len(m.peers))[:k] {
		out = append(out, m.peers[i])
	}
	return out
}

// Tick implements node.Machine: once per Period, push the buffer to Fanout
// random peers and send a digest to one.
func (m *Machine) Tick(now time.Time) {
	m.now = now
	if m.round.IsZero() {
		// Rounds start at a random phase, so members do not all gossip
		// in the same instant.
		m.round = now.Add(time.Duration(m.cfg.Rand.Int64N(int64(m.cfg.Period))))
		return
	}
	if now.Before(m.round) {
		return
	}
	m.round = now.Add(m.cfg.Period)
	m.ticks++
	if m.busy && len(m.buf) == 0 && len(m.fwd) == 0 {
		m.busy = false
		m.events = append(m.events, IdleEvent{Event: "idle"})
	}
	if m.cfg.View > 0 {
		m.shuffle()
		if len(m.view) == 0 {
			return
		}
	} else if len(m.peers) == 0 {
		return
	}
	if m.cfg.Tree {
		m.forward()
		if m.ticks%m.cfg.PullEvery == 0 {
			m.pullTree()
		}
		return
	}
	m.trim()
	if len(m.buf) > 0 {
		var push []Event
		size := 0
		keep := m.buf[:0]
		for _, ev := range m.buf {
			if size+len(ev.Payload) > pushBudget || len(push) == maxEvents {
				keep = append(keep, ev) // next round
				continue
			}
			size += len(ev.Payload)
			push = append(push, ev)
			if ev.TTL > 1 {
				ev.TTL--
				keep = append(keep, ev)
			}
		}
		m.buf = keep
		for _, p := range m.pick(m.cfg.Fanout) {
			m.stats["pushed"]++
			m.send(p, Msg{Type: MsgPush, Events: push})
		}
	}
	if to := m.pick(1); len(to) > 0 {
		m.pull(to[0])
	}
}

// pull sends the digest to a peer (anti-entropy).
func (m *Machine) pull(to node.ID) {
	if !m.cfg.noPull {
		m.send(to, Msg{Type: MsgDigest, Digest: m.digest()})
	}
}

// digest is, per origin, the sequence number below which this member has
// every event.
func (m *Machine) digest() []Have {
	digest := make([]Have, 0, len(m.next))
	for o := range m.next {
		digest = append(digest, Have{Origin: o, Next: m.next[o]})
	}
	slices.SortFunc(digest, func(a, b Have) int { return int(a.Origin) - int(b.Origin) })
	if len(digest) > maxDigest {
		digest = digest[:maxDigest]
	}
	return digest
}

// Ready implements node.Machine.
func (m *Machine) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: m.out, Events: m.events, Wake: m.round}
	m.out, m.events = nil, nil
	return r
}
