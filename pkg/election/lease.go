package election

import (
	"fmt"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// LeaseEvent reports that this process, as leader of Term, holds the lease
// until Until (its own clock) or no longer holds it. A user that must be
// the only actor in the cluster acts only between a held event and Until
// (doc.go "Leases"). Renewals move Until forward; they are events so that a
// runner can move its own deadline, and are not printed.
// Text form: "lease held term 7" or "lease lost term 7 (reason)".
type LeaseEvent struct {
	Event   string    `json:"event"` // "lease"
	Term    uint64    `json:"term"`
	Held    bool      `json:"held"`
	Reason  string    `json:"reason,omitempty"` // why a lease ended
	Renewed bool      `json:"-"`                // Held, and it was held already
	Until   time.Time `json:"-"`                // the lease's end on this process's clock
}

func (e LeaseEvent) Kind() string { return "lease" }
func (e LeaseEvent) String() string {
	if e.Held {
		return fmt.Sprintf("lease held term %d", e.Term)
	}
	return fmt.Sprintf("lease lost term %d (%s)", e.Term, e.Reason)
}

// leases is the lease state (doc.go "Leases"). Every process keeps a
// promise; a leader also counts acknowledgements of its heartbeats.
type leases struct {
	// promise: this process acknowledges no leader but promisedTo before
	// promiseUntil (own clock), nor anyone before quietUntil (a restarted
	// process does not remember the promises of its earlier life).
	promisedTo   node.ID
	promiseUntil time.Time
	quietUntil   time.Time

	// leader side, for the current term
	seq  uint64                // heartbeat number
	sent map[uint64]time.Time  // heartbeat number → when sent
	ends map[node.ID]time.Time // how long each process's promise lets the leader act (self included)
	end  time.Time             // the lease runs until here
	held bool
}

// usable is how long after sending a heartbeat its acknowledgements let a
// leader act: the followers promise Lease on their clocks from receipt,
// which in real time is at least Lease/(1+Drift) after the send; the
// leader measures on a clock that may run fast by Drift, so it stops at
// Lease·(1−Drift)/(1+Drift) by its clock, and Guard earlier still so that
// what it runs can be stopped in time.
func (m *Machine) usable() time.Duration {
	r := m.cfg.Drift
	if m.cfg.leaseBug == bugNoDrift {
		r = 0
	}
	if m.cfg.leaseBug == bugNoGuard {
		return time.Duration(float64(m.cfg.Lease) * (1 - r) / (1 + r))
	}
	return time.Duration(float64(m.cfg.Lease)*(1-r)/(1+r)) - m.cfg.Guard
}

// maxPromise is the longest promise this process may give: Lease stretched
// by the largest health score (doc.go "Local health").
func (m *Machine) maxPromise() time.Duration {
	return m.cfg.Lease * time.Duration(1+m.health.Max)
}

// stretchNow is the lease multiple this process asks for (as leader) or
// promises at least (as follower) at now: 1 + its health score.
func (m *Machine) stretchNow(now time.Time) uint8 {
	return uint8(1 + m.health.Score(now))
}

// leaseBug names a bug the tests plant to prove the lease checker fails.
type leaseBug uint8

const (
	bugIgnorePromises leaseBug = 1 + iota // acknowledge anyone at once
	bugNoDrift                            // no margin for clock rates
	bugNoQuiet                            // a restarted process acknowledges at once
	bugNoGuard                            // the leader acts until the drift margin, no guard before it
)

// mayAck reports whether this process may promise l now.
func (m *Machine) mayAck(l node.ID, now time.Time) bool {
	ls := &m.lease
	if m.cfg.leaseBug == bugIgnorePromises {
		return true
	}
	if now.Before(ls.quietUntil) {
		return false
	}
	return ls.promisedTo == l || ls.promisedTo == node.None || !now.Before(ls.promiseUntil)
}

// promise promises l k·Lease from now. A promise to the same leader only
// ever grows: the leader counts the longest it was given.
func (m *Machine) promise(l node.ID, now time.Time, k uint8) {
	until := now.Add(m.cfg.Lease * time.Duration(k))
	if m.lease.promisedTo == l && m.lease.promiseUntil.After(until) {
		return
	}
	m.lease.promisedTo = l
	m.lease.promiseUntil = until
}

// promised is the multiple a follower promises when asked for k: at least
// k and its own 1+score (a starved follower, too, would rather its leader
// kept the lease through its stalls), at most 1+Awareness.
func (m *Machine) promised(now time.Time, k uint8) uint8 {
	return min(max(k, m.stretchNow(now), 1), uint8(1+m.health.Max))
}

// leaseBeat numbers a heartbeat the leader sends now, and lets the leader
// count itself when its own promise allows. It returns the number and the
// lease multiple to ask for.
func (m *Machine) leaseBeat(now time.Time) (uint64, uint8) {
	ls := &m.lease
	ls.seq++
	if ls.sent == nil {
		ls.sent = map[uint64]time.Time{}
		ls.ends = map[node.ID]time.Time{}
	}
	ls.sent[ls.seq] = now
	for k, t := range ls.sent {
		if now.Sub(t) > m.maxPromise() {
			delete(ls.sent, k)
		}
	}
	k := m.stretchNow(now)
	if m.mayAck(m.cfg.ID, now) {
		m.promise(m.cfg.ID, now, k)
		m.leaseAck(now, m.cfg.ID, m.leaderTerm, ls.seq, k)
	}
	return ls.seq, k
}

// leaseHeartbeat: a follower that accepted l as leader of term acknowledges
// heartbeat seq, if its promise allows.
func (m *Machine) leaseHeartbeat(now time.Time, l node.ID, term, seq uint64, k uint8) {
	if m.leading || m.leader != l || m.leaderTerm != term || !m.mayAck(l, now) {
		return
	}
	k = m.promised(now, k)
	m.promise(l, now, k)
	m.send(l, Msg{Type: MsgLeaseAck, Term: term, Round: seq, Stretch: k})
}

// leaseAck counts an acknowledgement of heartbeat seq of term by from,
// which promised k·Lease. Each process's promise lets the leader act until
// the heartbeat's send time plus k usable periods (the longest such end
// over its acknowledgements: its promises only grow); the lease runs until
// the latest time that a majority's promises all cover.
func (m *Machine) leaseAck(now time.Time, from node.ID, term, seq uint64, k uint8) {
	ls := &m.lease
	if !m.leading || term != m.leaderTerm || ls.ends == nil || seq > ls.seq {
		return
	}
	sent, ok := ls.sent[seq]
	if !ok {
		return
	}
	k = max(k, 1)
	if e := sent.Add(m.usable() * time.Duration(k)); e.After(ls.ends[from]) {
		ls.ends[from] = e
	}
	quorum := len(m.peers)/2 + 1
	if len(ls.ends) < quorum {
		return
	}
	ends := make([]time.Time, 0, len(ls.ends))
	for _, e := range ls.ends {
		ends = append(ends, e)
	}
	slices.SortFunc(ends, time.Time.Compare)
	end := ends[len(ends)-quorum]
	if !end.After(ls.end) || !end.After(now) {
		return
	}
	if ls.held && ls.end.Sub(now) < m.usable()/2 {
		// A near miss: more than half the lease was gone before a
		// majority renewed it. Ask for longer promises before a stall
		// makes it run out (doc.go "Local health").
		m.trouble(now)
	}
	ls.end = end
	m.events = append(m.events, LeaseEvent{Event: "lease", Term: m.leaderTerm, Held: true, Renewed: ls.held, Until: end})
	ls.held = true
}

// leaseReset starts counting afresh for a new term.
func (m *Machine) leaseReset() {
	ls := &m.lease
	ls.sent, ls.ends = map[uint64]time.Time{}, map[node.ID]time.Time{}
	ls.end = time.Time{}
}

// leaseLost ends a held lease.
func (m *Machine) leaseLost(reason string) {
	ls := &m.lease
	if !ls.held {
		return
	}
	ls.held = false
	m.events = append(m.events, LeaseEvent{Event: "lease", Term: m.leaderTerm, Held: false, Reason: reason, Until: ls.end})
}

// leaseTick ends a lease that ran out.
func (m *Machine) leaseTick(now time.Time) {
	if m.lease.held && !now.Before(m.lease.end) {
		// A lease that ran out is a sign of trouble here or at the
		// followers: ask for longer promises from now on (doc.go
		// "Local health").
		m.trouble(now)
		m.leaseLost("no majority acknowledged within the lease")
	}
}

// leaseResigned: the leader this process promised resigned; it ran nothing
// when it did (a runner resigns once its command has ended), so the promise
// is void.
func (m *Machine) leaseResigned(l node.ID) {
	if m.lease.promisedTo == l {
		m.lease.promisedTo, m.lease.promiseUntil = node.None, time.Time{}
	}
}

// LeaseChecker verifies the lease property from LeaseEvents placed on a
// common time line (the simulator's real time, or one host's clock): the
// intervals from a held event to the lease's end, as last reported, of
// different leaderships never overlap. Observe each event with its time and
// its Until converted to the same time line.
type LeaseChecker struct {
	open      map[node.ID]*span
	done      []span
	Intervals int
	// Overlap is the largest overlap seen (zero when safe).
	Overlap time.Duration
	// Margin: intervals of different leaderships must also lie at least
	// this far apart, the real time Guard promises for stopping what a
	// lease protects (Guard/(1+Drift): the holder measures it on a clock
	// that may run fast by Drift). Zero checks only that they do not
	// overlap.
	Margin time.Duration
	// Closest is the smallest gap seen between intervals of different
	// leaderships (negative: an overlap; zero until two are compared).
	Closest  time.Duration
	compared bool
}

type span struct {
	id         node.ID
	term       uint64
	from, till time.Time
}

// NewLeaseChecker returns an empty LeaseChecker.
func NewLeaseChecker() *LeaseChecker { return &LeaseChecker{open: map[node.ID]*span{}} }

// Observe takes ev, reported by id at real time at, with ev.Until already
// mapped to real time as until.
func (c *LeaseChecker) Observe(id node.ID, at time.Time, ev LeaseEvent, until time.Time) error {
	sp := c.open[id]
	if ev.Held {
		if sp == nil || sp.term != ev.Term {
			if sp != nil {
				if err := c.close(sp); err != nil {
					return err
				}
			}
			sp = &span{id: id, term: ev.Term, from: at, till: until}
			c.open[id] = sp
			c.Intervals++
		}
		if until.After(sp.till) {
			sp.till = until
		}
		return c.against(sp)
	}
	if sp != nil {
		delete(c.open, id)
		return c.close(sp)
	}
	return nil
}

// Crashed closes id's open lease: what it ran died with it.
func (c *LeaseChecker) Crashed(id node.ID, at time.Time) error {
	sp := c.open[id]
	if sp == nil {
		return nil
	}
	delete(c.open, id)
	if at.Before(sp.till) {
		sp.till = at
	}
	return c.close(sp)
}

func (c *LeaseChecker) close(sp *span) error {
	c.done = append(c.done, *sp)
	return c.against(sp)
}

// against checks sp against every other leadership's interval.
func (c *LeaseChecker) against(sp *span) error {
	check := func(o *span) error {
		if o.id == sp.id {
			// One process's successive terms: its runner stops what
			// the old lease ran before it starts anything under the new.
			return nil
		}
		lo, hi := sp.from, sp.till
		if o.from.After(lo) {
			lo = o.from
		}
		if o.till.Before(hi) {
			hi = o.till
		}
		d := hi.Sub(lo)
		if !c.compared || -d < c.Closest {
			c.Closest, c.compared = -d, true
		}
		if d > 0 {
			c.Overlap = max(c.Overlap, d)
			return fmt.Errorf("two lease holders at once: %d (term %d) and %d (term %d) overlap by %v",
				sp.id, sp.term, o.id, o.term, d)
		}
		if -d < c.Margin {
			return fmt.Errorf("lease holders closer than the guard: %d (term %d) and %d (term %d) are %v apart, under %v",
				sp.id, sp.term, o.id, o.term, -d, c.Margin)
		}
		return nil
	}
	for _, o := range c.open {
		if err := check(o); err != nil {
			return err
		}
	}
	for i := range c.done {
		if err := check(&c.done[i]); err != nil {
			return err
		}
	}
	return nil
}
