package clock

import (
	"fmt"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Lamport is a Lamport logical clock (Tanenbaum ch. 6, "Logical clocks"): Tick
// before every local event and send, Observe every received stamp. If a
// happened before b then C(a) < C(b). The zero value reads 0.
type Lamport struct{ t uint64 }

// Now returns the current value without advancing it.
func (l *Lamport) Now() uint64 { return l.t }

// Tick advances the clock for a local event or a send and returns the
// event's stamp.
func (l *Lamport) Tick() uint64 { l.t++; return l.t }

// Observe merges a received stamp: the clock moves past it. It returns the
// receive event's stamp.
func (l *Lamport) Observe(stamp uint64) uint64 {
	l.t = max(l.t, stamp) + 1
	return l.t
}

// Vector is a vector clock over process IDs (Tanenbaum ch. 6, "Vector clocks"):
// V(a) < V(b) exactly when a happened before b. Missing entries are zero.
type Vector map[node.ID]uint64

// Tick counts a local event (or send) of process self and returns a copy
// to stamp it with.
func (v Vector) Tick(self node.ID) Vector { v[self]++; return v.Copy() }

// Observe merges a received stamp (entry-wise maximum) and counts the
// receive as an event of self.
func (v Vector) Observe(self node.ID, stamp Vector) Vector {
	for id, t := range stamp {
		v[id] = max(v[id], t)
	}
	v[self]++
	return v.Copy()
}

// Copy returns an independent copy.
func (v Vector) Copy() Vector {
	out := make(Vector, len(v))
	for id, t := range v {
		out[id] = t
	}
	return out
}

// Order is the outcome of comparing two vector stamps.
type Order int

const (
	Before Order = iota - 1
	Equal
	After
	Concurrent
)

func (o Order) String() string {
	switch o {
	case Before:
		return "before"
	case Equal:
		return "equal"
	case After:
		return "after"
	}
	return "concurrent"
}

// Compare says whether a happened before b, after it, is the same, or is
// concurrent with it.
func Compare(a, b Vector) Order {
	less, more := false, false
	for id := range union(a, b) {
		switch {
		case a[id] < b[id]:
			less = true
		case a[id] > b[id]:
			more = true
		}
	}
	switch {
	case less && more:
		return Concurrent
	case less:
		return Before
	case more:
		return After
	}
	return Equal
}

func union(a, b Vector) map[node.ID]bool {
	ids := map[node.ID]bool{}
	for id := range a {
		ids[id] = true
	}
	for id := range b {
		ids[id] = true
	}
	return ids
}

func (v Vector) String() string {
	ids := make([]node.ID, 0, len(v))
	for id := range v {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	s := "["
	for i, id := range ids {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%d:%d", id, v[id])
	}
	return s + "]"
}
