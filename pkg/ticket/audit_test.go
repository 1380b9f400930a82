package ticket

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// auditor checks, at every call the simulator makes into a Machine, what
// the outcome checkers (DisjointActing, EpochChecker) see only when it has
// already gone wrong, or not at all:
//
//   - UPDATE identity: an ACKUPDATE that a process counts as its
//     successor's delivery status answers the last UPDATE it sent that
//     successor (known from its output, not its state); an UPDATE resent
//     carries the R it was first sent with; and a successor that
//     acknowledged holds as its L one of the Rs its predecessor believes
//     it may hold (the lists an exclusion's quorum is counted against).
//   - Support accounting: a process never handles a message after its
//     support ran out without leaving the core first (§4: support is
//     checked before every message); only a message that names its own
//     place (an ALIVE for its ticket, an UPDATE or NEWSUCC naming it
//     successor) counts as its sender vouching for it, and it extends
//     support only if L names that sender at the place it vouches from
//     (an ALIVE's Place, an UPDATE's Ticket);
//     and each round it sends at most 2k+1 ALIVEs to its closest
//     successors, one per receiver, each naming the receiver's ticket as
//     the sender knows it.
//   - Bans (Algorithm 5, REQCOORD): ring arithmetic done here, apart from
//     the machine's: no live ban covers its holder's own ticket (a voter
//     is outside E_pq), no ALIVE goes into a banned range and no banned
//     ticket is among the successors (but the immediate one, whom an
//     excluder's own ban covers), and the ban each voter granted for an
//     exclusion attempt whose ACKCOORD the excluder counted lasts at
//     least as long as that attempt's temporary coordinatorship: the
//     wait counts the first vouch at the factor its quorum reported, the
//     ban at Grant, so the ban is never the shorter (doc.go, "Busy hosts:
//     a stall of the whole host"). Each wait is compared with the bans
//     of its own attempt only: an excluder that excludes the same range
//     again (a new process took the ticket it excluded) waits anew, over
//     a chain that may differ, and a ban granted for the earlier attempt
//     says nothing about it.
//   - Epochs (EpochChecker.Ahead): every ticket in the range of a process
//     that may act gets, when next handed out or lent, an epoch above
//     every epoch used for it so far.
//
// The first failure is kept and returned by check, which the simulator's
// Invariant calls after every step.
type auditor struct {
	s        *sim.Sim[Msg]
	ids      []node.ID // sorted
	machines map[node.ID]*Machine
	// act: which processes may act at this step (acting), computed once
	// a step for DisjointActing and check.
	act    map[node.ID]bool
	epochs *EpochChecker
	err    error
	// upd: the last UPDATE each process sent (its receiver, number and R).
	upd map[node.ID]Msg
	// bans: the shortest ban each voter granted for each exclusion
	// attempt (on the voter's clock), as it granted it.
	bans map[attemptBan]time.Duration
	// took: the processes that served each place's CLEAVE (speak.go),
	// seen as their speaks grew.
	took map[Owner]map[node.ID]bool
}

// attemptBan names the ban a voter granted for one exclusion attempt.
type attemptBan struct {
	voter, excluder node.ID
	attempt         uint64
}

func newAuditor(ids []node.ID, machines map[node.ID]*Machine, epochs *EpochChecker) *auditor {
	return &auditor{ids: slices.Sorted(slices.Values(ids)), machines: machines, act: map[node.ID]bool{}, epochs: epochs, upd: map[node.ID]Msg{},
		bans: map[attemptBan]time.Duration{}, took: map[Owner]map[node.ID]bool{}}
}

func (a *auditor) fail(format string, args ...any) {
	if a.err == nil {
		a.err = fmt.Errorf(format, args...)
	}
}

// wrap returns m as the simulator should run it, audited.
func (a *auditor) wrap(m *Machine) node.Machine[Msg] {
	delete(a.upd, m.cfg.ID) // a new incarnation numbers its UPDATEs afresh
	// and its exclusion attempts
	maps.DeleteFunc(a.bans, func(k attemptBan, _ time.Duration) bool { return k.excluder == m.cfg.ID })
	return &audited{Machine: m, a: a}
}

type audited struct {
	*Machine
	a   *auditor
	now time.Time // the last call's time (the machine's clock)
}

func acting(st state) bool { return st == stLinking || st == stCoordinator }

func (w *audited) Step(now time.Time, in node.Envelope[Msg]) error {
	m, a := w.Machine, w.a
	w.now = now
	st, ticket, until := m.st, m.ticket, m.SupportedUntil()
	updAcked := m.updAcked
	// The place the message vouches from: an ALIVE names its sender's
	// ticket (Place), an UPDATE or NEWSUCC carries it as Ticket.
	from := Owner{Ticket: in.Msg.Ticket, ID: in.From}
	if in.Msg.Type == MsgAlive {
		from.Ticket = in.Msg.Place
	}
	heard, had := m.alive[from]
	oldL := slices.Clone(m.preds)
	bans, temp := slices.Clone(m.bans), m.temp
	speaks := slices.Clone(m.speaks)
	err := m.Step(now, in)
	for _, s := range m.speaks {
		if !slices.Contains(speaks, s) {
			if a.took[s.place] == nil {
				a.took[s.place] = map[node.ID]bool{}
			}
			a.took[s.place][m.cfg.ID] = true
		}
	}
	if !m.cfg.FaultTolerant {
		return err
	}
	var req *node.Envelope[Msg]
	if in.Msg.Type == MsgReqCoord {
		req = &in
	}
	w.bansAndWaits(now, bans, req, temp)
	if in.From == m.cfg.ID {
		return err
	}
	// Only a message that names this place vouches for it: an ALIVE for
	// its ticket, an UPDATE or NEWSUCC naming it successor, or the grant
	// that placed it.
	if at, ok := m.alive[from]; acting(st) && ok && (!had || !at.Equal(heard)) {
		names := false
		switch in.Msg.Type {
		case MsgAlive:
			names = in.Msg.Ticket == ticket
		case MsgUpdate, MsgNewSucc:
			names = in.Msg.SuccTicket == ticket
		}
		if !names {
			a.fail("process %d (ticket %d) counted %v (ticket %d, successor ticket %d) from %d as vouching for it",
				m.cfg.ID, ticket, in.Msg.Type, in.Msg.Ticket, in.Msg.SuccTicket, in.From)
		}
	}
	// Support is checked before every message, not only at ticks: a
	// driver can hand a process that wakes from a pause its queued
	// messages before its timer fires.
	if acting(st) && !until.IsZero() && !now.Before(until) && acting(m.st) {
		a.fail("process %d handled %v from %d at %v, after its support ran out at %v, and still %s",
			m.cfg.ID, in.Msg.Type, in.From, now, until, m.st)
	}
	// Support only from a member of L that names this place.
	if after := m.SupportedUntil(); acting(st) && acting(m.st) && !until.IsZero() && !after.IsZero() && after.After(until) {
		// ... and from the place L names it at: a vouch from the same ID
		// at another ticket (a later incarnation) extends nothing.
		mine := m.ticket == ticket && slices.Contains(m.preds, from)
		switch in.Msg.Type {
		case MsgAlive:
			// ... or from a place of L whose CLEAVE the sender served,
			// which it speaks for (speak.go).
			took := slices.ContainsFunc(in.Msg.Preds, func(o Owner) bool { return a.took[o][in.From] && slices.Contains(m.preds, o) })
			mine = (mine || m.ticket == ticket && took) && in.Msg.Ticket == m.ticket
		case MsgUpdate:
			mine = mine && in.Msg.SuccTicket == m.ticket
		case MsgNewSucc:
			// A founder's first predecessor stands in its L at no
			// ticket until its first UPDATE (onNewSucc).
			mine = m.ticket == ticket && in.Msg.SuccTicket == m.ticket &&
				(mine || slices.Contains(m.preds, Owner{Ticket: NoTicket, ID: in.From}))
		case MsgHandL:
			// A leaving predecessor hands on its L (doc.go, "A hand-back
			// beside a cut"): only while our L is its R (its place at the
			// head), and only for this place.
			mine = m.ticket == ticket && len(oldL) > 0 && oldL[0] == Owner{Ticket: in.Msg.Ticket, ID: in.From} &&
				in.Msg.SuccTicket == m.ticket
		case MsgCLeave:
			// A taker drops the place it took from its own L (speak.go,
			// dropTaken), and only that place.
			left := Owner{Ticket: in.Msg.Ticket, ID: in.From}
			mine = m.ticket == ticket && slices.Contains(oldL, left) && !slices.Contains(m.preds, left) &&
				len(m.preds) == len(oldL)-1
		default:
			mine = false
		}
		if !mine {
			a.fail("process %d (ticket %d) took support from %v (ticket %d, successor ticket %d) from %d, L %v",
				m.cfg.ID, m.ticket, in.Msg.Type, in.Msg.Ticket, in.Msg.SuccTicket, in.From, m.preds)
		}
	}
	// An ACKUPDATE counted as the delivery status answers the UPDATE in
	// flight: the last one this process sent, to this successor.
	if in.Msg.Type == MsgAckUpdate && !updAcked && m.updAcked {
		last, ok := a.upd[m.cfg.ID]
		if !ok || last.Attempt != in.Msg.Attempt || last.Succ != in.From {
			a.fail("process %d counted %d's ACKUPDATE %d as the answer to its UPDATE %d to %d",
				m.cfg.ID, in.From, in.Msg.Attempt, last.Attempt, last.Succ)
		}
	}
	return err
}

func (w *audited) Tick(now time.Time) {
	w.now = now
	m := w.Machine
	bans, temp := slices.Clone(m.bans), m.temp
	m.Tick(now)
	if m.cfg.FaultTolerant {
		w.bansAndWaits(now, bans, nil, temp)
	}
}

// bansAndWaits notes the bans a call granted, under the exclusion
// attempt each answers (a REQCOORD's, or the excluder's own for its
// attempt), and checks a temporary coordinatorship the call began
// against the bans of the voters its attempt counted.
func (w *audited) bansAndWaits(now time.Time, before []ban, req *node.Envelope[Msg], temp *temporary) {
	m, a := w.Machine, w.a
	cur := m.ex // the attempt asked in this call, if any
	if m.temp != nil && m.temp != temp {
		cur = m.temp.ex
	}
	for _, b := range m.bans {
		if slices.Contains(before, b) {
			continue
		}
		var k attemptBan
		switch {
		case req != nil:
			k = attemptBan{voter: m.cfg.ID, excluder: req.From, attempt: req.Msg.Attempt}
		case cur != nil && cur.asked && b.from == m.ticket:
			k = attemptBan{voter: m.cfg.ID, excluder: m.cfg.ID, attempt: cur.id}
		default:
			a.fail("process %d granted a ban on %d..%d outside any exclusion attempt", m.cfg.ID, b.from, b.to)
			continue
		}
		if d, ok := a.bans[k]; !ok || b.until.Sub(now) < d {
			a.bans[k] = b.until.Sub(now)
		}
	}
	if m.temp == nil || m.temp == temp {
		return
	}
	ex := m.temp.ex
	wait := m.temp.until.Sub(now)
	for _, v := range slices.Sorted(maps.Keys(ex.acks)) {
		if !ex.acks[v] {
			continue
		}
		d, ok := a.bans[attemptBan{voter: v, excluder: m.cfg.ID, attempt: ex.id}]
		if !ok {
			a.fail("process %d counted %d's ACKCOORD for attempt %d, which granted no ban for it", m.cfg.ID, v, ex.id)
		} else if d < wait {
			a.fail("process %d banned %d..%d for %v, but %d's temporary coordinatorship for it waits %v",
				v, m.ticket, m.temp.q.Ticket, d, m.cfg.ID, wait)
		}
	}
}

func (w *audited) Ready() node.Ready[Msg] {
	m, a := w.Machine, w.a
	r := m.Ready()
	if !m.cfg.FaultTolerant {
		return r
	}
	to := map[node.ID]bool{}
	closest := 0
	for _, env := range r.Msgs {
		switch env.Msg.Type {
		case MsgUpdate:
			if last, ok := a.upd[m.cfg.ID]; ok && last.Attempt == env.Msg.Attempt && !slices.Equal(last.Preds, env.Msg.Preds) {
				a.fail("process %d resent UPDATE %d with R %v, first sent with %v", m.cfg.ID, env.Msg.Attempt, env.Msg.Preds, last.Preds)
			}
			u := env.Msg
			u.Succ = env.To
			a.upd[m.cfg.ID] = u
		case MsgAlive:
			if to[env.To] {
				a.fail("process %d sent two ALIVEs to %d at once", m.cfg.ID, env.To)
			}
			to[env.To] = true
			if slices.Contains(m.succs, Owner{Ticket: env.Msg.Ticket, ID: env.To}) {
				closest++
			} else if f, ok := m.former[env.To]; !ok || f.ticket != env.Msg.Ticket {
				a.fail("process %d sent ALIVE for ticket %d to %d, which it knows neither as one of its successors %v nor as a former one",
					m.cfg.ID, env.Msg.Ticket, env.To, m.succs)
			}
			for _, b := range m.bans {
				if w.now.Before(b.until) && inRange(m.n, b.from, b.to, env.Msg.Ticket) {
					a.fail("process %d sent ALIVE to %d (ticket %d), inside the range %d..%d it banned", m.cfg.ID, env.To, env.Msg.Ticket, b.from, b.to)
				}
			}
		}
	}
	if closest > 2*m.cfg.K+1 {
		a.fail("process %d sent ALIVE to %d of its closest successors at once (2k+1 = %d)", m.cfg.ID, closest, 2*m.cfg.K+1)
	}
	return r
}

// inRange reports whether ticket t lies strictly inside E_pq, from p's
// ticket down the ring (successor side) to q's: the tickets p excludes
// (§4, Algorithm 5). Ring arithmetic of its own, not the machine's.
func inRange(n, p, q, t uint32) bool {
	if n == 0 {
		return false
	}
	for u := (p + n - 1) % n; u != q; u = (u + n - 1) % n {
		if u == t {
			return true
		}
		if u == p {
			break // q not on the ring: nothing is inside
		}
	}
	return false
}

// acting reports whether id may act now (as computed by invariant).
func (a *auditor) acting(id node.ID) bool { return a.act[id] }

// invariant is the simulator's Invariant: Theorem 4.1 (DisjointActing),
// then check.
func (a *auditor) invariant() error {
	for _, id := range a.ids {
		m := a.machines[id]
		a.act[id] = m != nil && a.s.Alive(id) && m.MayAct(a.s.LocalNow(id))
	}
	if err := DisjointActing(a.machines, a.acting); err != nil {
		return err
	}
	return a.check()
}

// check runs the invariants over every live process; the simulator calls
// it after every step.
func (a *auditor) check() error {
	if a.err != nil {
		return a.err
	}
	s := a.s
	for _, id := range a.ids {
		m := a.machines[id]
		if m == nil || !s.Alive(id) || !m.cfg.FaultTolerant {
			continue
		}
		now := s.LocalNow(id)
		// Bans: a voter is outside the range it stops vouching for (how
		// long each lasts is checked as the wait it protects begins:
		// bansAndWaits).
		for _, b := range m.bans {
			if !now.Before(b.until) {
				continue
			}
			if acting(m.st) && inRange(m.n, b.from, b.to, m.ticket) {
				return fmt.Errorf("process %d (ticket %d) holds a ban on %d..%d, which covers its own ticket", id, m.ticket, b.from, b.to)
			}
			for _, o := range m.succs {
				// The immediate successor stays first: an excluder's own
				// ban covers the successor it is excluding.
				if o.ID != m.succ && inRange(m.n, b.from, b.to, o.Ticket) {
					return fmt.Errorf("process %d counts %d (ticket %d) among its successors inside the range %d..%d it banned", id, o.ID, o.Ticket, b.from, b.to)
				}
			}
		}
		if !a.act[id] {
			continue
		}
		if err := a.epochs.Ahead(id, m); err != nil {
			return err
		}
		// The successor's L is one of the Rs this process believes it may
		// hold, once it has acknowledged one of our UPDATEs.
		sid := m.succ
		sm := a.machines[sid]
		if sid == id || sm == nil || !s.Alive(sid) || !m.succAcked || !acting(sm.st) || sm.ticket != m.succTicket || sm.pred != id {
			continue
		}
		self := Owner{Ticket: sm.ticket, ID: sid}
		if !slices.ContainsFunc(m.sentRs, func(r []Owner) bool {
			return sameL(r, self, sm.preds, 2*m.cfg.K+1, m.n, func(o Owner) bool { return a.took[o][sid] })
		}) {
			return fmt.Errorf("process %d's successor %d holds L %v, none of the Rs %v it believes %d may hold", id, sid, sm.preds, m.sentRs, sid)
		}
	}
	return nil
}

// sameL reports whether l is the L that self makes of the R r (setPreds:
// cut where it comes back round to self, then lFor), without allocating:
// it runs after every step.
func sameL(r []Owner, self Owner, l []Owner, max int, n uint32, taken func(Owner) bool) bool {
	i, kept := 0, 0
	var seen []node.ID
	for _, o := range r {
		if o == self || kept == max {
			break
		}
		if o.ID == node.None || o.Ticket >= n || o.ID == self.ID || slices.Contains(seen, o.ID) {
			continue
		}
		seen = append(seen, o.ID)
		kept++
		if taken(o) && (i == len(l) || l[i] != o) {
			continue // a place the holder took, dropped from its own L while it speaks for it (dropTaken)
		}
		if i == len(l) || l[i] != o {
			return false
		}
		i++
	}
	return i == len(l)
}
