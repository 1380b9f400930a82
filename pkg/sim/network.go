package sim

import (
	"container/heap"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/clock"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// NoteKind says what a Note reports.
type NoteKind uint8

// The kinds of Note.
const (
	NoteSend    NoteKind = iota // a message entered the network
	NoteLoss                    // a message was lost: sent over a cut or into loss, or arrived at a crashed node
	NoteDeliver                 // a machine is handed a message
	NoteReject                  // the machine's Step returned an error for it
	NoteEvent                   // a machine reported an event
	NoteBoot                    // a machine started (Incarnation says which life)
	NoteCrash                   // a machine crashed
	NoteDrop                    // a message in flight was taken out of the network (DropInFlight)
)

// Note is one thing that happened in a simulation, for Sim.Watch.
// Messages are given as their wire type and encoded payload.
type Note struct {
	Kind        NoteKind
	From, To    node.ID // From alone for events, boots and crashes
	Type        uint8
	Payload     []byte
	Event       node.Event
	Err         error
	Incarnation int
}

func (s *Sim[M]) note(n Note) {
	if s.Watch != nil {
		s.Watch(n)
	}
}

// Add starts new nodes at the current virtual time. IDs already present
// are ignored.
func (s *Sim[M]) Add(ids ...node.ID) {
	var fresh []*simNode[M]
	for _, id := range ids {
		if _, ok := s.nodes[id]; ok || id == node.None {
			continue
		}
		n := &simNode[M]{id: id, clk: clock.Skewed{Epoch: s.now}}
		s.nodes[id] = n
		s.ids = append(s.ids, id)
		fresh = append(fresh, n)
	}
	slices.Sort(s.ids)
	// Every new node is known before the first boots, so that each
	// machine's factory sees them all.
	for _, n := range fresh {
		s.boot(n)
	}
}

// InFlight counts the messages in the network from one node to another
// that have not been delivered yet; node.None matches any node.
func (s *Sim[M]) InFlight(from, to node.ID) int {
	k := 0
	for _, it := range s.q {
		if it.matches(from, to) {
			k++
		}
	}
	return k
}

func (it *item) matches(from, to node.ID) bool {
	return !it.dead && it.kind == kindDeliver && (from == node.None || it.from == from) && (to == node.None || it.to == to)
}

// flights returns the matching messages in flight in the order the network
// would deliver them.
func (s *Sim[M]) flights(from, to node.ID) []*item {
	var out []*item
	for _, it := range s.q {
		if it.matches(from, to) {
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b *item) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return int(a.seq - b.seq)
	})
	return out
}

// DeliverNow hands every message in flight from one node to another to
// its receiver at once, ahead of its latency, in the order the network
// would have delivered them; node.None matches any node. It returns how
// many it delivered (messages to a crashed node are lost, to a paused one
// held).
func (s *Sim[M]) DeliverNow(from, to node.ID) int {
	k := 0
	for _, it := range s.flights(from, to) {
		if s.err != nil {
			break
		}
		it.dead = true
		k++
		switch n := s.nodes[it.to]; {
		case n == nil || !n.alive:
			s.Stats.Dropped[it.typ]++
			s.note(Note{Kind: NoteLoss, From: it.from, To: it.to, Type: it.typ, Payload: it.payload})
		case n.paused:
			n.held = append(n.held, it)
		default:
			s.deliver(n, it)
		}
		s.invariant()
	}
	return k
}

// DropInFlight loses every message in flight from one node to another;
// node.None matches any node. It returns how many it dropped.
func (s *Sim[M]) DropInFlight(from, to node.ID) int {
	k := 0
	for _, it := range s.flights(from, to) {
		it.dead = true
		k++
		s.Stats.Dropped[it.typ]++
		s.note(Note{Kind: NoteDrop, From: it.from, To: it.to, Type: it.typ, Payload: it.payload})
	}
	return k
}

// StepUntilQuiet processes the simulation's events in time order (timers
// due meanwhile fire as usual) until no message is in flight, at most
// limit of them. It reports whether the network went quiet.
func (s *Sim[M]) StepUntilQuiet(limit int) bool {
	for range limit {
		if s.err != nil {
			return false
		}
		if s.InFlight(node.None, node.None) == 0 {
			return true
		}
		for len(s.q) > 0 && s.q[0].dead {
			heap.Pop(&s.q)
		}
		s.RunUntil(s.q[0].at)
	}
	return s.InFlight(node.None, node.None) == 0
}

func (s *Sim[M]) invariant() {
	if s.err == nil && s.Invariant != nil {
		if err := s.Invariant(); err != nil {
			s.fail(err)
		}
	}
}
