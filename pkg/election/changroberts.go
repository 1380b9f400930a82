package election

import (
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// changRoberts is Chang and Roberts' ring election (Schaffernicht, Topic V
// "Chang's Ring algorithm"): each process sends its own candidacy round
// the ring; a process passes on only candidates better than itself, so
// only the best one comes back to its origin, which then leads. It takes
// the ring's transport and coordinator handling.
type changRoberts struct{ ring }

func (m changRoberts) initiate(now time.Time) {
	m.round++
	m.participant = true
	m.claimSend(now, Msg{Type: MsgElection, Origin: m.cfg.ID, Round: m.round, Term: m.term,
		Leader: m.cfg.ID, Members: []Member{{m.cfg.ID, m.cfg.Priority}}})
}

func (m changRoberts) election(now time.Time, from node.ID, msg Msg) {
	if !m.firstSight(now, from, msg) || len(msg.Members) != 1 {
		return
	}
	m.take(now, msg)
}

// take applies Chang–Roberts' rules to a claim this process holds.
func (m changRoberts) take(now time.Time, msg Msg) {
	cand := msg.Members[0]
	m.prio[cand.ID] = cand.Prio
	delete(m.down, cand.ID) // the candidate was alive when it sent this
	m.electAt = time.Time{}
	switch {
	case m.leading && m.better(m.cfg.ID, cand.ID):
		// A live leader outranks the candidate: assert leadership to it
		// rather than start a round that would only bump the term.
		m.send(cand.ID, Msg{Type: MsgHeartbeat, Leader: m.cfg.ID, Term: m.leaderTerm})
	case m.better(cand.ID, m.cfg.ID):
		// Pass the better candidate on. A follower now waits for the
		// outcome and runs again if the candidacy dies with its owner; a
		// leader keeps leading until the better process announces itself.
		m.participant = true
		if !m.leading {
			m.electing = true
			m.coordBy = now.Add(m.cfg.Timeout + m.cfg.AnswerTimeout*time.Duration(len(m.peers)))
		}
		m.claimSend(now, msg)
	case !m.participant || !m.electing:
		// Replace the weaker candidate by ourselves (Schaffernicht, Topic V:
		// elect(max(i, j))).
		m.campaign(now)
	default:
		// Already carrying a candidacy at least as good: swallow the
		// weaker one (Chang–Roberts).
	}
}

// completed: our own candidacy came all the way round; we lead.
func (m changRoberts) completed(now time.Time, _ Msg) {
	t := m.ownedTerm(m.cfg.ID, m.term)
	coord := Msg{Type: MsgCoordinator, Origin: m.cfg.ID, Round: m.round, Leader: m.cfg.ID, Term: t,
		Members: []Member{{m.cfg.ID, m.cfg.Priority}}}
	m.applyCoordinator(now, coord)
	m.ringSend(now, coord)
}
