package ticket

import (
	"fmt"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Disjoint checks Theorem 3.1 (and Theorem 4.1's statement) at one
// instant: no ticket lies in the range S_p (owned or coordinated) of two
// processes that own one (linking or coordinator; a leaving process has
// stopped acting). It returns the first conflict.
func Disjoint(ms map[node.ID]*Machine) error {
	return DisjointActing(ms, nil)
}

// DisjointActing is Theorem 4.1: among the processes that may act at this
// instant (acting(id), or all when nil), no ticket lies in two ranges.
// Under §4 a process whose support has run out, or that has crashed, acts
// no more even if its state still says coordinator.
func DisjointActing(ms map[node.ID]*Machine, acting func(node.ID) bool) error {
	holder := map[uint32]node.ID{}
	for _, id := range sortedIDs(ms) {
		if acting != nil && !acting(id) {
			continue
		}
		for _, t := range ms[id].Range() {
			if other, ok := holder[t]; ok {
				return fmt.Errorf("ticket %d is in the ranges of both %d (%s) and %d (%s)",
					t, other, ms[other].st, id, ms[id].st)
			}
			holder[t] = id
		}
	}
	return nil
}

// Covered checks Lemma 3.1 once the pool has settled: no hand-over is in
// progress, every one of the n tickets is owned or coordinated, each
// owner's successor owns the ticket it names and names it as predecessor,
// and a process still asking for a ticket does so only because none is
// free (or the pool has ended: its last member left).
func Covered(ms map[node.ID]*Machine, n uint32) error {
	covered := map[uint32]node.ID{}
	owners := map[node.ID]*Machine{}
	var asking []node.ID
	for _, id := range sortedIDs(ms) {
		m := ms[id]
		if m.st == stJoining {
			asking = append(asking, id)
			continue
		}
		if m.st == stLinking || m.st == stLeaving || m.await {
			return fmt.Errorf("process %d is still %s (awaiting its successor: %v)", id, m.st, m.await)
		}
		if m.st != stCoordinator {
			continue
		}
		owners[id] = m
		for _, t := range m.Range() {
			covered[t] = id
		}
	}
	if len(owners) == 0 {
		return nil // the pool ended
	}
	if len(asking) > 0 && len(owners) < int(n) {
		return fmt.Errorf("process %d still asks for a ticket while %d of %d are free", asking[0], int(n)-len(owners), n)
	}
	if uint32(len(covered)) != n {
		return fmt.Errorf("%d of %d tickets owned or coordinated", len(covered), n)
	}
	for id, m := range owners {
		s := owners[m.succ]
		if s == nil {
			return fmt.Errorf("%d's successor %d owns no ticket", id, m.succ)
		}
		if s.ticket != m.succTicket && m.succ != id {
			return fmt.Errorf("%d thinks its successor %d owns %d; it owns %d", id, m.succ, m.succTicket, s.ticket)
		}
		if s.pred != id && len(owners) > 1 {
			return fmt.Errorf("%d's successor %d names %d as its predecessor", id, m.succ, s.pred)
		}
	}
	return nil
}

func sortedIDs(ms map[node.ID]*Machine) []node.ID {
	ids := make([]node.ID, 0, len(ms))
	for id := range ms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// EpochChecker checks fencing: every (ticket, epoch) a process takes or
// lends to a client is new, and above every epoch of that ticket before it,
// over a whole run: across reclaims, restarts and pools founded again.
type EpochChecker struct {
	last  map[uint32]uint64
	by    map[uint32]node.ID
	Taken int
	Lent  int
}

// NewEpochChecker returns an empty EpochChecker.
func NewEpochChecker() *EpochChecker {
	return &EpochChecker{last: map[uint32]uint64{}, by: map[uint32]node.ID{}}
}

// Observe checks one TakenEvent reported by id.
func (c *EpochChecker) Observe(id node.ID, ev TakenEvent) error {
	c.Taken++
	return c.see(id, ev.Ticket, ev.Epoch, "took")
}

// ObserveLend checks one epoch that Machine.Lend gave id's client.
func (c *EpochChecker) ObserveLend(id node.ID, ticket uint32, epoch uint64) error {
	c.Lent++
	return c.see(id, ticket, epoch, "lent")
}

func (c *EpochChecker) see(id node.ID, ticket uint32, epoch uint64, what string) error {
	last, ok := c.last[ticket]
	switch {
	case epoch == 0:
		return fmt.Errorf("process %d %s ticket %d with epoch 0", id, what, ticket)
	case ok && epoch == last:
		return fmt.Errorf("process %d %s ticket %d with epoch %d, which %d had already used", id, what, ticket, epoch, c.by[ticket])
	case epoch < last:
		return fmt.Errorf("process %d %s ticket %d with epoch %d, below epoch %d used by %d before", id, what, ticket, epoch, last, c.by[ticket])
	}
	c.last[ticket], c.by[ticket] = epoch, id
	return nil
}

// Ahead checks fencing before the fact, on the state of a process that may
// act: every ticket in its range gets, when next handed out (above both
// the ticket's last epoch and the mark, onCJoin) or lent (its own, Lend),
// an epoch above every epoch of that ticket the checker has seen taken or
// lent; a process still linking will take its own at the epoch it was
// granted, which must be above them too. A reclaim that raises the mark by too little fails here at once,
// whether or not the ticket is handed out again within the run.
func (c *EpochChecker) Ahead(id node.ID, m *Machine) error {
	if m.st != stLinking && m.st != stCoordinator {
		return nil
	}
	for k := uint32(0); k < m.size(); k++ {
		t := (m.ticket - k + m.n) % m.n
		last, ok := c.last[t]
		if !ok {
			continue
		}
		next, how := max(m.epochs[t], m.floor)+1, "hand out"
		switch {
		case t == m.ticket && m.st == stLinking:
			next, how = m.epochs[t], "take"
		case t == m.ticket:
			next, how = m.epochs[t]+1, "lend"
		}
		if next <= last {
			return fmt.Errorf("process %d would %s ticket %d with epoch %d next, not above epoch %d that %d used (its mark %d)",
				id, how, t, next, last, c.by[t], m.floor)
		}
	}
	return nil
}
