package election

import (
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// ring is election in a ring with a member list (Tanenbaum §6.5 "Election
// in a ring"; Nita-Rotaru, 7610 "Ring algorithm"): the election message
// goes round collecting every live member; back at its origin, the
// highest-priority member is announced round the ring.
type ring struct{ common }

func (m ring) initiate(now time.Time) {
	m.round++
	m.ringSend(now, Msg{Type: MsgElection, Origin: m.cfg.ID, Round: m.round, Term: m.term,
		Members: []Member{{m.cfg.ID, m.cfg.Priority}}})
}

// leaderLost: ring initiations are jittered so that, when every process
// notices at once, one circulation usually starts first and the others
// join it.
func (m ring) leaderLost(now time.Time) {
	m.electAt = now.Add(time.Duration(m.cfg.Rand.Int64N(int64(m.cfg.Heartbeat) + 1)))
}

// successor is the next process after from in ring order that is not
// believed down, or self when every other process is.
func (m *Machine) successor(now time.Time, after node.ID) node.ID {
	i := m.index[after]
	for k := 1; k <= len(m.peers); k++ {
		p := m.peers[(i+k)%len(m.peers)]
		if p == m.cfg.ID || !m.isDown(p, now) {
			return p
		}
	}
	return m.cfg.ID
}

// ringSend forwards a ring message to the next live successor and waits
// for its acknowledgement.
func (m *Machine) ringSend(now time.Time, msg Msg) {
	m.ringSendAfter(now, msg, m.cfg.ID)
}

func (m *Machine) ringSendAfter(now time.Time, msg Msg, after node.ID) {
	to := m.successor(now, after)
	k := ringKey{msg.Type, msg.Origin, msg.Round}
	if to == m.cfg.ID {
		// Every other process is down: the message comes straight back.
		delete(m.hops, k)
		m.seen[k] = now
		m.ringArrive(now, msg)
		return
	}
	m.seen[k] = now
	m.hops[k] = &hop{msg: msg, to: to, deadline: now.Add(m.cfg.AnswerTimeout)}
	m.send(to, msg)
}

func (m *Machine) ack(to node.ID, msg Msg) {
	m.send(to, Msg{Type: MsgAck, Of: msg.Type, Origin: msg.Origin, Round: msg.Round})
}

// firstSight acknowledges a ring message and reports whether it is new.
// A message of our own that completed its circulation is handed to
// ringArrive (which ignores stale or repeated returns) and reported as not new.
func (m *Machine) firstSight(now time.Time, from node.ID, msg Msg) bool {
	m.ack(from, msg)
	if msg.Origin == m.cfg.ID {
		m.ringArrive(now, msg)
		return false
	}
	k := ringKey{msg.Type, msg.Origin, msg.Round}
	if _, dup := m.seen[k]; dup {
		return false
	}
	m.seen[k] = now
	return true
}

// ringArrive handles a ring message that completed its circulation.
func (m *Machine) ringArrive(now time.Time, msg Msg) {
	if msg.Origin != m.cfg.ID {
		return // the origin is down: let its circulation die
	}
	switch msg.Type {
	case MsgElection:
		if msg.Round != m.round || !m.electing {
			return // an older or repeated circulation of ours
		}
		m.algo.completed(now, msg)
	case MsgCoordinator:
		// Nita-Rotaru's CS7610 notes: when the LEADER message returns, the election is over.
	}
}

func (m ring) election(now time.Time, from node.ID, msg Msg) {
	if !m.firstSight(now, from, msg) || len(msg.Members) == 0 {
		return
	}
	// Every member listed added itself moments ago: fresh evidence that
	// it is alive, so it is no longer skipped as a successor.
	for _, mb := range msg.Members {
		delete(m.down, mb.ID)
	}
	if !slices.ContainsFunc(msg.Members, func(mb Member) bool { return mb.ID == m.cfg.ID }) {
		msg.Members = append(slices.Clone(msg.Members), Member{m.cfg.ID, m.cfg.Priority})
	}
	msg.Term = max(msg.Term, m.term)
	// Taking part in someone else's election stands in for starting our own.
	m.electAt = time.Time{}
	m.ringSend(now, msg)
}

func (m ring) coordinator(now time.Time, from node.ID, msg Msg) {
	if !m.firstSight(now, from, msg) {
		return
	}
	m.applyCoordinator(now, msg)
	m.ringSend(now, msg)
}

// applyCoordinator installs the leader a ring coordinator message names.
func (m *Machine) applyCoordinator(now time.Time, msg Msg) {
	for _, mb := range msg.Members {
		m.prio[mb.ID] = mb.Prio
	}
	if msg.Leader == m.cfg.ID {
		if msg.Term > m.term || (msg.Term == m.term && !m.leading && msg.Term > m.cfg.Term) { // a term known at start may be one led before a restart
			m.term = msg.Term
			m.leading = true
			m.adopt(m.cfg.ID, msg.Term)
			m.nextBeat = now
		}
		return
	}
	m.claim(now, msg.Leader, msg.Term)
}

// completed: back at the initiator, the highest-priority member leads the
// new ring, at a term that member owns (Nita-Rotaru, 7610: "Sends a LEADER
// message that announces the new leader ... List of the members").
func (m ring) completed(now time.Time, msg Msg) {
	best := msg.Members[0]
	for _, mb := range msg.Members[1:] {
		m.prio[mb.ID] = mb.Prio
		if mb.Prio > best.Prio || mb.Prio == best.Prio && mb.ID > best.ID {
			best = mb
		}
	}
	t := m.ownedTerm(best.ID, max(m.term, msg.Term))
	coord := Msg{Type: MsgCoordinator, Origin: m.cfg.ID, Round: m.round, Leader: best.ID, Term: t, Members: msg.Members}
	m.applyCoordinator(now, coord)
	m.ringSend(now, coord)
}

// retryHops skips successors that did not acknowledge a ring message.
func (m *Machine) retryHops(now time.Time) {
	var due []ringKey
	for k, h := range m.hops {
		if !h.deadline.After(now) {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b ringKey) int {
		if c := int(a.typ) - int(b.typ); c != 0 {
			return c
		}
		if a.origin != b.origin {
			return int(a.origin) - int(b.origin)
		}
		if a.round < b.round {
			return -1
		}
		if a.round > b.round {
			return 1
		}
		return 0
	})
	for _, k := range due {
		h := m.hops[k]
		delete(m.hops, k)
		m.down[h.to] = now
		m.ringSendAfter(now, h.msg, h.to)
	}
}
