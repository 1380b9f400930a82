package election

import (
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// bully is Garcia-Molina's bully algorithm (Schaffernicht, Topic V "Bully
// algorithm"; Tanenbaum §6.5 "Election by bullying"): ask every higher
// process; if none answers in time, lead; a process that answers takes over
// the election.
type bully struct{ common }

func (m bully) initiate(now time.Time) {
	m.targets = m.targets[:0]
	for _, p := range m.peers {
		if p != m.cfg.ID && m.better(p, m.cfg.ID) && !m.isDown(p, now) {
			m.targets = append(m.targets, p)
		}
	}
	if len(m.targets) == 0 {
		m.win(now)
		return
	}
	for _, p := range m.targets {
		m.send(p, Msg{Type: MsgElection})
	}
	m.answerBy = now.Add(m.cfg.AnswerTimeout)
}

// win: no higher process answered; announce victory to everyone not
// known to be down (Nita-Rotaru, 7610: the second-highest detecting the failure
// needs only n−2 messages).
func (m bully) win(now time.Time) {
	m.become(now)
	for _, p := range m.peers {
		if p != m.cfg.ID && !m.isDown(p, now) {
			m.send(p, Msg{Type: MsgCoordinator, Leader: m.cfg.ID, Term: m.leaderTerm})
		}
	}
}

func (m bully) election(now time.Time, from node.ID, _ Msg) {
	if !m.better(m.cfg.ID, from) {
		return // only lower processes ask us
	}
	m.send(from, Msg{Type: MsgAnswer})
	switch {
	case m.leading:
		// Already the leader: tell the asker at once instead of
		// starting an election that would only bump the term.
		m.send(from, Msg{Type: MsgCoordinator, Leader: m.cfg.ID, Term: m.leaderTerm})
	case !m.electing:
		m.campaign(now) // Schaffernicht, Topic V: "starts an election on its own"
	}
}

// answer: a reply means a higher process is alive; wait for its
// coordinator message (Schaffernicht, Topic V).
func (m bully) answer(now time.Time) {
	if m.electing {
		m.answered = true
		m.answerBy = time.Time{}
		m.coordBy = now.Add(m.cfg.CoordinatorTimeout)
	}
}

// answersDue: nobody higher answered within 2·MDT + MHT: they are down.
func (m bully) answersDue(now time.Time) {
	for _, p := range m.targets {
		m.down[p] = now
	}
	if m.electing && !m.answered {
		m.win(now)
	}
}

func (m bully) coordinator(now time.Time, _ node.ID, msg Msg) { m.claim(now, msg.Leader, msg.Term) }

// leaderLost: the bully campaigns at once.
func (m bully) leaderLost(now time.Time) { m.campaign(now) }
