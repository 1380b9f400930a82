package sim

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/clock"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Options configure a simulation. Zero values mean the default.
type Options struct {
	Seed uint64
	// Start is the virtual time at which the run begins (default 2026-01-01 UTC).
	Start time.Time
	// MinLatency and MaxLatency bound the uniform one-way delay of every
	// link (defaults 1ms and 5ms). Unequal delays reorder messages.
	MinLatency, MaxLatency time.Duration
	// Latency, if set, replaces the uniform distribution per link.
	Latency func(rng *rand.Rand, from, to node.ID) time.Duration
	Drop    float64 // probability a message is lost
	Dup     float64 // probability a message is delivered twice
	// HeldFirst is the probability that Resume hands a paused process
	// some of the messages it queued before the tick that shows it the
	// time jump, as a real driver can (it may read its socket before its
	// timer fires): the tick then comes at a position drawn uniformly
	// among the held messages, possibly after all of them. 0 (the default)
	// always ticks first. The choice is drawn from a stream of its own,
	// derived from Seed, so that turning it on leaves every other draw of
	// a run (latencies, losses) as it was.
	HeldFirst float64
}

// Factory builds the machine for id in its incarnation-th life (1 for the
// first start); rng is seeded from the simulation seed.
type Factory[M any] func(id node.ID, incarnation int, rng *rand.Rand) node.Machine[M]

// Stats counts messages by wire type.
type Stats struct {
	Sent, Delivered, Dropped map[uint8]int
	Rejected                 int // Step returned an error
	Events                   int
}

type itemKind uint8

const (
	kindDeliver itemKind = iota
	kindWake
	kindFunc
)

type item struct {
	at      time.Time
	seq     uint64
	kind    itemKind
	from    node.ID
	to      node.ID
	typ     uint8
	payload []byte
	token   uint64
	fn      func()
	dead    bool // taken out of the network (Scenario's deliver and drop)
}

type queue []*item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*item)) }
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

type simNode[M any] struct {
	id          node.ID
	m           node.Machine[M]
	incarnation int
	alive       bool
	paused      bool
	held        []*item
	clk         clock.Skewed
	token       uint64
}

// Sim is one simulation run. It is not safe for concurrent use.
type Sim[M any] struct {
	opts    Options
	rng     *rand.Rand
	sched   *rand.Rand // Resume's order (Options.HeldFirst)
	codec   wire.Codec[M]
	factory Factory[M]
	now     time.Time
	nodes   map[node.ID]*simNode[M]
	ids     []node.ID
	q       queue
	seq     uint64
	cut     map[[2]node.ID]bool
	trace   hash.Hash64
	err     error

	// OnEvent sees every event a machine reports, at the global virtual
	// time, with the reporting node. A non-nil error stops the run.
	OnEvent func(at time.Time, id node.ID, ev node.Event) error
	// Invariant runs after every simulation step. A non-nil error stops the run.
	Invariant func() error
	// Trace, when set, sees every step (boot, crash, delivery, event) as
	// one line, for reading what a failing seed did.
	Trace func(line string)
	// Watch, when set, sees every send, loss, delivery, rejection, event,
	// boot and crash as a Note (pkg/sim's Scenario prints them).
	Watch func(Note)
	// Stats accumulates message counts.
	Stats Stats
}

// New creates a simulation of the given nodes, all started at Options.Start.
func New[M any](opts Options, codec wire.Codec[M], factory Factory[M], ids ...node.ID) *Sim[M] {
	if opts.Start.IsZero() {
		opts.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if opts.MinLatency == 0 && opts.MaxLatency == 0 {
		opts.MinLatency, opts.MaxLatency = time.Millisecond, 5*time.Millisecond
	}
	if opts.MaxLatency < opts.MinLatency {
		opts.MaxLatency = opts.MinLatency
	}
	s := &Sim[M]{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0xda3e39cb94b95bdb)), codec: codec,
		factory: factory, now: opts.Start, nodes: map[node.ID]*simNode[M]{}, cut: map[[2]node.ID]bool{},
		trace: fnv.New64a(), sched: rand.New(rand.NewPCG(opts.Seed^0x6a09e667f3bcc908, opts.Seed+1)),
		Stats: Stats{Sent: map[uint8]int{}, Delivered: map[uint8]int{}, Dropped: map[uint8]int{}}}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	s.ids = slices.Compact(ids)
	for _, id := range s.ids {
		s.nodes[id] = &simNode[M]{id: id, clk: clock.Skewed{Epoch: opts.Start}}
	}
	for _, id := range s.ids {
		s.boot(s.nodes[id])
	}
	return s
}

// Seed returns the seed the run was created with.
func (s *Sim[M]) Seed() uint64 { return s.opts.Seed }

// Now returns the global virtual time.
func (s *Sim[M]) Now() time.Time { return s.now }

// IDs returns every node ID, sorted.
func (s *Sim[M]) IDs() []node.ID { return slices.Clone(s.ids) }

// Machine returns the current machine of id (nil while crashed).
func (s *Sim[M]) Machine(id node.ID) node.Machine[M] {
	if n := s.nodes[id]; n != nil && n.alive {
		return n.m
	}
	return nil
}

// Alive reports whether id is running (paused counts as running).
func (s *Sim[M]) Alive(id node.ID) bool { n := s.nodes[id]; return n != nil && n.alive }

// LocalNow is id's own clock reading at the current virtual instant.
func (s *Sim[M]) LocalNow(id node.ID) time.Time { return s.nodes[id].clk.At(s.now) }

// RealTime maps a reading of id's clock to the simulator's time line,
// the inverse of LocalNow: checkers use it to put a deadline a machine
// computed on its own clock beside other machines' events.
func (s *Sim[M]) RealTime(id node.ID, local time.Time) time.Time {
	return s.nodes[id].clk.BaseOf(local)
}

// Paused reports whether id is paused.
func (s *Sim[M]) Paused(id node.ID) bool { n := s.nodes[id]; return n != nil && n.paused }

// Err returns the first failure of the run, if any.
func (s *Sim[M]) Err() error { return s.err }

// TraceHash summarises everything that happened so far: two runs with the
// same seed and the same script must produce the same hash.
func (s *Sim[M]) TraceHash() uint64 { return s.trace.Sum64() }

// SetFaults changes the loss and duplication probabilities.
func (s *Sim[M]) SetFaults(drop, dup float64) { s.opts.Drop, s.opts.Dup = drop, dup }

// SetLatency changes the uniform latency bounds.
func (s *Sim[M]) SetLatency(lo, hi time.Duration) {
	s.opts.MinLatency, s.opts.MaxLatency = lo, max(lo, hi)
}

// SetClock gives id a clock offset from global time and a drift in ppm.
func (s *Sim[M]) SetClock(id node.ID, offset time.Duration, driftPPM float64) {
	n := s.nodes[id]
	n.clk = clock.Skewed{Offset: offset, DriftPPM: driftPPM, Epoch: s.now}
}

// Cut stops messages from a to b (one way).
func (s *Sim[M]) Cut(a, b node.ID) { s.cut[[2]node.ID{a, b}] = true }

// Isolate cuts id off from every other node in both directions.
func (s *Sim[M]) Isolate(id node.ID) {
	for _, o := range s.ids {
		if o != id {
			s.Cut(id, o)
			s.Cut(o, id)
		}
	}
}

// Partition splits the nodes into groups that cannot talk to each other.
func (s *Sim[M]) Partition(groups ...[]node.ID) {
	group := map[node.ID]int{}
	for i, g := range groups {
		for _, id := range g {
			group[id] = i + 1
		}
	}
	for _, a := range s.ids {
		for _, b := range s.ids {
			if a != b && group[a] != group[b] {
				s.Cut(a, b)
			}
		}
	}
}

// Heal removes every cut.
func (s *Sim[M]) Heal() { clear(s.cut) }

// Crash stops id; messages in flight to it are lost.
func (s *Sim[M]) Crash(id node.ID) {
	n := s.nodes[id]
	if n == nil || !n.alive {
		return
	}
	n.alive, n.paused, n.m, n.held = false, false, nil, nil
	n.token++
	s.record("crash", id, 0, 0, nil)
	s.note(Note{Kind: NoteCrash, From: id})
}

// Restart starts a fresh machine for a crashed id, in a new incarnation.
func (s *Sim[M]) Restart(id node.ID) {
	if n := s.nodes[id]; n != nil && !n.alive {
		s.boot(n)
	}
}

// Pause freezes id: it receives nothing (messages queue up) and no timer
// fires until Resume, like a process under SIGSTOP.
func (s *Sim[M]) Pause(id node.ID) {
	if n := s.nodes[id]; n != nil && n.alive {
		n.paused = true
	}
}

// Resume unfreezes id: it sees the time jump, then the queued messages.
// With Options.HeldFirst, some or all of the queued messages may come
// before the tick (a seeded choice, replayed exactly by the seed).
func (s *Sim[M]) Resume(id node.ID) {
	n := s.nodes[id]
	if n == nil || !n.alive || !n.paused {
		return
	}
	n.paused = false
	held := n.held
	n.held = nil
	at := 0 // how many held messages come before the tick
	if s.opts.HeldFirst > 0 && len(held) > 0 && s.sched.Float64() < s.opts.HeldFirst {
		at = 1 + s.sched.IntN(len(held))
		s.record("resume", id, 0, 0, binary.BigEndian.AppendUint32(nil, uint32(at)))
	}
	for i := 0; i <= len(held); i++ {
		if i == at && n.alive && !n.paused {
			s.tick(n)
		}
		if i < len(held) && n.alive && !n.paused {
			s.deliver(n, held[i])
		}
	}
}

// Inject hands id a local request (an Envelope from itself).
func (s *Sim[M]) Inject(id node.ID, msg M) {
	n := s.nodes[id]
	if n == nil || !n.alive || n.paused || s.err != nil {
		return
	}
	if err := n.m.Step(s.local(n), node.Envelope[M]{From: id, To: id, Msg: msg}); err != nil {
		s.Stats.Rejected++
	}
	s.drain(n)
}

// At schedules fn to run at virtual time t (for fault schedules).
func (s *Sim[M]) At(t time.Time, fn func()) { s.push(&item{at: t, kind: kindFunc, fn: fn}) }

// RunFor advances virtual time by d, processing everything due.
func (s *Sim[M]) RunFor(d time.Duration) error { return s.RunUntil(s.now.Add(d)) }

// RunUntil processes events up to and including virtual time t.
func (s *Sim[M]) RunUntil(t time.Time) error {
	for s.err == nil && len(s.q) > 0 && !s.q[0].at.After(t) {
		it := heap.Pop(&s.q).(*item)
		if it.dead {
			continue
		}
		s.now = it.at
		switch it.kind {
		case kindFunc:
			it.fn()
		case kindWake:
			if n := s.nodes[it.to]; n.alive && !n.paused && it.token == n.token {
				s.tick(n)
			}
		case kindDeliver:
			n := s.nodes[it.to]
			switch {
			case n == nil || !n.alive:
				s.Stats.Dropped[it.typ]++
				s.note(Note{Kind: NoteLoss, From: it.from, To: it.to, Type: it.typ, Payload: it.payload})
			case n.paused:
				n.held = append(n.held, it)
			default:
				s.deliver(n, it)
			}
		}
		if s.err == nil && s.Invariant != nil {
			if err := s.Invariant(); err != nil {
				s.fail(err)
			}
		}
	}
	if s.err == nil && t.After(s.now) {
		s.now = t
	}
	return s.err
}

func (s *Sim[M]) fail(err error) {
	if s.err == nil {
		s.err = fmt.Errorf("sim seed %d at +%v: %w", s.opts.Seed, s.now.Sub(s.opts.Start), err)
	}
}

func (s *Sim[M]) push(it *item) {
	s.seq++
	it.seq = s.seq
	heap.Push(&s.q, it)
}

func (s *Sim[M]) local(n *simNode[M]) time.Time { return n.clk.At(s.now) }

func (s *Sim[M]) boot(n *simNode[M]) {
	n.incarnation++
	n.alive, n.paused, n.held = true, false, nil
	seed := s.opts.Seed*1_000_003 + uint64(n.id)*7919 + uint64(n.incarnation)
	n.m = s.factory(n.id, n.incarnation, rand.New(rand.NewPCG(seed, uint64(n.id))))
	n.token++
	s.record("boot", n.id, 0, uint8(n.incarnation), nil)
	s.note(Note{Kind: NoteBoot, From: n.id, Incarnation: n.incarnation})
	s.tick(n)
}

func (s *Sim[M]) tick(n *simNode[M]) {
	n.m.Tick(s.local(n))
	s.drain(n)
}

func (s *Sim[M]) deliver(n *simNode[M], it *item) {
	msg, err := s.codec.Unmarshal(it.typ, it.payload)
	if err != nil {
		s.fail(fmt.Errorf("codec cannot decode its own %d-byte message type %d from %d: %v", len(it.payload), it.typ, it.from, err))
		return
	}
	s.Stats.Delivered[it.typ]++
	s.record("deliver", it.from, it.to, it.typ, it.payload)
	s.note(Note{Kind: NoteDeliver, From: it.from, To: it.to, Type: it.typ, Payload: it.payload})
	if err := n.m.Step(s.local(n), node.Envelope[M]{From: it.from, To: it.to, Msg: msg}); err != nil {
		s.Stats.Rejected++
		s.note(Note{Kind: NoteReject, From: it.from, To: it.to, Type: it.typ, Payload: it.payload, Err: err})
	}
	s.drain(n)
}

// drain collects a machine's output: sends its messages, reports its
// events and schedules its next wake-up.
func (s *Sim[M]) drain(n *simNode[M]) {
	r := n.m.Ready()
	for _, ev := range r.Events {
		s.Stats.Events++
		s.record("event "+ev.String(), n.id, 0, 0, nil)
		s.note(Note{Kind: NoteEvent, From: n.id, Event: ev})
		if s.OnEvent != nil && s.err == nil {
			if err := s.OnEvent(s.now, n.id, ev); err != nil {
				s.fail(fmt.Errorf("node %d: %w", n.id, err))
			}
		}
	}
	for _, env := range r.Msgs {
		s.send(n.id, env)
	}
	n.token++
	if !r.Wake.IsZero() {
		at := n.clk.BaseOf(r.Wake)
		if at.Before(s.now) {
			at = s.now
		}
		// Round up so that the node's local clock has reached Wake.
		for n.clk.At(at).Before(r.Wake) {
			at = at.Add(time.Nanosecond)
		}
		s.push(&item{at: at, kind: kindWake, to: n.id, token: n.token})
	}
}

func (s *Sim[M]) send(from node.ID, env node.Envelope[M]) {
	typ, payload, err := s.codec.Marshal(env.Msg)
	if err != nil {
		s.fail(fmt.Errorf("node %d cannot encode a message: %v", from, err))
		return
	}
	if len(payload) > wire.MaxPayload {
		// The driver could not seal it: on real sockets it is never sent.
		s.fail(fmt.Errorf("node %d sent a %d-byte message of type %d, more than a frame holds (%d)", from, len(payload), typ, wire.MaxPayload))
		return
	}
	s.Stats.Sent[typ]++
	if _, ok := s.nodes[env.To]; !ok || s.cut[[2]node.ID{from, env.To}] || s.rng.Float64() < s.opts.Drop {
		s.Stats.Dropped[typ]++
		s.note(Note{Kind: NoteLoss, From: from, To: env.To, Type: typ, Payload: payload})
		return
	}
	s.note(Note{Kind: NoteSend, From: from, To: env.To, Type: typ, Payload: payload})
	copies := 1
	if s.rng.Float64() < s.opts.Dup {
		copies = 2
	}
	for range copies {
		s.push(&item{at: s.now.Add(s.latency(from, env.To)), kind: kindDeliver, from: from, to: env.To,
			typ: typ, payload: payload})
	}
}

func (s *Sim[M]) latency(from, to node.ID) time.Duration {
	if s.opts.Latency != nil {
		return s.opts.Latency(s.rng, from, to)
	}
	span := int64(s.opts.MaxLatency - s.opts.MinLatency)
	if span <= 0 {
		return s.opts.MinLatency
	}
	return s.opts.MinLatency + time.Duration(s.rng.Int64N(span+1))
}

func (s *Sim[M]) record(what string, a, b node.ID, typ uint8, payload []byte) {
	var buf [8 + 4 + 4 + 1]byte
	binary.BigEndian.PutUint64(buf[:], uint64(s.now.UnixNano()))
	binary.BigEndian.PutUint32(buf[8:], uint32(a))
	binary.BigEndian.PutUint32(buf[12:], uint32(b))
	buf[16] = typ
	s.trace.Write(buf[:])
	s.trace.Write([]byte(what))
	s.trace.Write(payload)
	if s.Trace != nil {
		s.Trace(fmt.Sprintf("+%v %s %d->%d type %d", s.now.Sub(s.opts.Start), what, a, b, typ))
	}
}
