package mutex

import (
	"cmp"
	"container/heap"
	"slices"
	"time"
)

// The central algorithm keeps its timers in two heaps, so that the work
// per message and per wake-up grows with the timers that are due, not
// with the locks held: a member's requests by when each next needs Tick
// (reqHeap), and a coordinator's locks by when a holder's lease or a
// waiter's wait runs out (lockHeap). Equal times are ordered by when the
// request or lock was made (a counter: names may be 255 bytes long, and
// thousands of renewals fall due at one instant), so the machine stays
// deterministic; the work that falls due at one Tick is done in that
// order too.

// due is when Tick must look at r: a resend, a renewal, the lease's end,
// or a non-blocking request's time to give up.
func (r *request) dueAt(lease time.Duration) time.Time {
	t := r.next
	if r.held && r.deferred.After(t) {
		t = r.deferred
	}
	if r.held && r.validUntil.Before(t) {
		t = r.validUntil
	}
	if !r.held && r.nonBlock {
		if g := r.asked.Add(lease / 2); g.Before(t) {
			t = g
		}
	}
	return t
}

// timer is an item's place in a timerHeap: when it is due, the order it
// was made in (which breaks ties) and its index in the heap (-1: not in it).
type timer struct {
	order uint64
	due   time.Time // when Tick must look at it (dueAt)
	idx   int
}

func (t *timer) slot() *timer { return t }

// timerHeap is a container/heap of items by due time, then by order.
type timerHeap[T interface{ slot() *timer }] []T

func (h timerHeap[T]) Len() int { return len(h) }
func (h timerHeap[T]) Less(i, j int) bool {
	a, b := h[i].slot(), h[j].slot()
	if !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	return a.order < b.order
}
func (h timerHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].slot().idx, h[j].slot().idx = i, j
}
func (h *timerHeap[T]) Push(x any) {
	v := x.(T)
	v.slot().idx = len(*h)
	*h = append(*h, v)
}
func (h *timerHeap[T]) Pop() any {
	old := *h
	v := old[len(old)-1]
	var zero T
	old[len(old)-1] = zero
	*h = old[:len(old)-1]
	v.slot().idx = -1
	return v
}

// dueBy lists the items due by until, in no particular order: a walk of
// the heap's top, in time proportional to what it returns.
func (h timerHeap[T]) dueBy(until time.Time) []T {
	var out []T
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(h) || h[i].slot().due.After(until) {
			continue
		}
		out = append(out, h[i])
		stack = append(stack, 2*i+1, 2*i+2)
	}
	return out
}

func (a reqKey) less(b reqKey) bool {
	if a.name != b.name {
		return a.name < b.name
	}
	return a.client < b.client
}

// schedule puts r in the request heap, or moves it after a change.
func (m *central) schedule(r *request) {
	r.due = r.dueAt(m.cfg.Lease)
	if r.idx < 0 {
		heap.Push(&m.reqHeap, r)
	} else {
		heap.Fix(&m.reqHeap, r.idx)
	}
}

// dropReq forgets a request.
func (m *central) dropReq(k reqKey) {
	if r := m.reqs[k]; r != nil {
		m.leave(r)
		if r.idx >= 0 {
			heap.Remove(&m.reqHeap, r.idx)
		}
		delete(m.reqs, k)
	}
}

// dueReqs lists, oldest first, the requests due by until.
func (m *central) dueReqs(until time.Time) []*request {
	out := m.reqHeap.dueBy(until)
	slices.SortFunc(out, func(a, b *request) int { return cmp.Compare(a.order, b.order) })
	return out
}

// lockDue is when the coordinator must look at l: its holder's lease
// ends, or its longest-silent waiter is given up (a waiter not heard from
// for more than a lease). Zero when neither can happen: a holder renewed
// by its member's session (whose end is a timer of its own,
// expireSessions) and nobody waiting.
func (l *lock) dueAt(lease time.Duration) time.Time {
	var t time.Time
	if l.holder != nil && !l.holder.inSess {
		t = l.holder.expires // a session's holder: the session's end (expireSessions)
	}
	for _, w := range l.queue {
		if g := w.lastSeen.Add(lease + 1); t.IsZero() || g.Before(t) {
			t = g
		}
	}
	return t
}

// tidy files a lock after a change: an empty one is forgotten; a free one
// with waiters is marked blocked (Tick hands it on once it may); every
// other one is rescheduled, or leaves the heap when it has no timer (a
// session's lock nobody waits for): the heap holds only locks that can
// fall due, so a Tick's work grows with them, not with the locks held.
func (m *central) tidy(l *lock) {
	if l == nil {
		return
	}
	if l.holder == nil && len(l.queue) == 0 {
		if l.idx >= 0 {
			heap.Remove(&m.lockHeap, l.idx)
		}
		delete(m.locks, l.name)
		m.namesStale = true
		delete(m.blocked, l.name)
		return
	}
	if l.holder == nil {
		m.blocked[l.name] = true
	} else {
		delete(m.blocked, l.name)
	}
	l.due = l.dueAt(m.cfg.Lease)
	switch {
	case l.due.IsZero():
		if l.idx >= 0 {
			heap.Remove(&m.lockHeap, l.idx)
		}
	case l.idx < 0:
		heap.Push(&m.lockHeap, l)
	default:
		heap.Fix(&m.lockHeap, l.idx)
	}
}

// dueLocks lists the names of the locks due by until, in no particular
// order.
func (m *central) dueLocks(until time.Time) []string {
	var out []string
	for _, l := range m.lockHeap.dueBy(until) {
		out = append(out, l.name)
	}
	return out
}

func sortKeys(keys []reqKey) {
	slices.SortFunc(keys, func(a, b reqKey) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
}
