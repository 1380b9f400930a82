package ticket

import (
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// introUncounted marks an INTRO with Ticket = NoTicket that answers an
// ALIVE with "I hold this ticket, but you are not in my L": the sender's
// ALIVEs do not count towards its support (SupportedUntil reads only
// L). A plain "gone" leaves Attempt zero.
const introUncounted = 1

// uncounted reports whether an ALIVE from sender vouches for nothing
// here: this process has a full L from its predecessor and the sender is
// not in it. Its answer lets a predecessor stop the ALIVEs it keeps
// sending to a successor a join pushed out of its 2k+1 closest (former,
// keepFormer) as soon as the new R has reached that successor, instead
// of for all of linger; the seed's §4.2 ("Message overhead") bounds a
// process's ALIVEs by 2k+1 per round.
//
// Like support, it goes by place: an ALIVE from an ID that L names at
// another ticket (a later incarnation) vouches for nothing either.
func (m *Machine) uncounted(sender Owner) bool {
	return m.cfg.FaultTolerant && m.predsFull && !slices.Contains(m.preds, sender)
}

// onUncounted: a former successor no longer counts on our ALIVEs; one of
// the 2k+1 closest keeps them (its L may not have caught up with a join
// yet, and will name us again).
func (m *Machine) onUncounted(from node.ID) {
	if !slices.ContainsFunc(m.succs, func(o Owner) bool { return o.ID == from }) {
		delete(m.former, from)
	}
}

// introFormer: an INTRO says that its sender's L names this process
// (introduce). One that is not among our 2k+1 closest any more (a join
// pushed it out) keeps our ALIVEs for linger, as keepFormer gives them:
// its "uncounted" may have answered an ALIVE that reached it one UPDATE
// before the R that names us (its predecessor's R lags the join by a
// hop), and ended them while its L was about to count on them (doc.go,
// "Why the longer wait seemed to strand live processes"). A ban stops
// them as it stops any other ALIVE.
//
// Only for the place its L names (SuccTicket, as NEWSUCC, UPDATE and
// ALIVE name theirs): an INTRO to an earlier incarnation of this ID, one
// that lost its support inside an E_pq and came back elsewhere, would
// otherwise have this new process vouch for the old one's successors,
// which count vouches by ID. §4, Corollary 4.1 needs r_j to send nothing
// once it stops acting (doc.go, "Safety: a chain inside E_pq"); with
// those ALIVEs a process of E_pq whose whole L had stopped kept its
// support past the excluder's wait (ticketsim seeds 2 and 37, Theorem
// 4.1).
func (m *Machine) introFormer(now time.Time, from node.ID, msg Msg) {
	t := msg.Ticket
	if m.banned(now, t) || msg.SuccTicket != m.ticket && m.cfg.bug != bugIntroAnyPlace ||
		slices.ContainsFunc(m.succs, func(o Owner) bool { return o.ID == from }) {
		return
	}
	if _, had := m.former[from]; !had {
		m.former[from] = known{ticket: t, at: now.Add(m.linger())}
	}
}

// bugIntroAnyPlace: an INTRO meant for an earlier incarnation of this ID
// at another ticket brings its sender our ALIVEs. Tests only.
const bugIntroAnyPlace bug = 145
