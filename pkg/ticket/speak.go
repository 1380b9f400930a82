package ticket

import (
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// A place that was given back, spoken for by the process that took it
// (doc.go, "A hand-back beside a cut: the taker speaks for the place").
//
// When y gives its ticket back, its predecessor p serves the CLEAVE and
// takes y's range. The processes whose L still names y learn of the leave
// only from the next UPDATE down the ring, and when the process that would
// pass it on is cut off just then, they keep one voucher fewer until that
// process is excluded: with k = 1 the one after it leaves the core and the
// rest follow. So p's ALIVEs also vouch for y's place (Msg.Preds on an
// ALIVE: the places it speaks for) for speakFor after it served the
// CLEAVE, and a process counts such a vouch for the entry of its L with
// that place, as if y had sent it.
//
// Safety (Theorem 4.1) then needs every process that may vouch for an
// entry to have stopped before the entry counts as banned: the excluder
// counts an entry of a list banned only when the process at that place
// acknowledged (its ACKCOORD names the places it answers for, Msg.Preds)
// and so did every process its CLEAVEs went to (Msg.Succs: ticket of the
// place, ID of the process; the excluder asks them too). A taker inside
// E_pq never acknowledges, so a place it may speak for never counts
// (counted says why). A voter answers for its own place and for the
// places its member's earlier processes left or were excluded from
// within keepOld; a member restarted without that memory answers for
// none of them, so its vote counts for no place it cannot vouch for.

// speakFor is how long the taker of a place vouches for it: long enough
// for the exclusion of a process cut off beside the leave (its detection
// and the temporary coordinator's wait, linger, stretched as a busy host
// stretches them), twice over. Safety does not depend on it.
func (m *Machine) speakFor() time.Duration {
	return 2 * time.Duration(m.stretch()) * m.linger()
}

// keepOld is how long a member's later processes answer for a place one
// of its processes left: past any vouch its taker makes for it, on any
// clock (twice speakFor).
func (m *Machine) keepOld() time.Duration { return 2 * m.speakFor() }

// spoken is a place this process took with a CLEAVE and vouches for.
type spoken struct {
	place Owner
	until time.Time
}

// oldPlace is a place an earlier process of this member held: its votes
// answer for it (via: where its CLEAVEs went, if it was leaving).
type oldPlace struct {
	place Owner
	via   []node.ID
	until time.Time
}

// bugTakerUnasked: the excluder counts a left place banned on its own
// process's vote, without the process that took it, which vouches for it
// on. Tests only.
const bugTakerUnasked bug = 162

// bugNoSpeaking: the taker of a place does not vouch for it (the rule
// above undone). Tests only.
const bugNoSpeaking bug = 163

// absorb: this process served from's CLEAVE for the place at ticket t.
func (m *Machine) absorb(now time.Time, from node.ID, t uint32) {
	if !m.cfg.FaultTolerant || m.cfg.bug == bugNoSpeaking || m.cfg.bug == bugLeaveUnconfirmed {
		return
	}
	o := Owner{Ticket: t, ID: from}
	m.speaks = slices.DeleteFunc(m.speaks, func(s spoken) bool { return s.place == o || !now.Before(s.until) })
	m.speaks = append(m.speaks, spoken{place: o, until: now.Add(m.speakFor())})
	if len(m.speaks) > MaxList {
		m.speaks = m.speaks[len(m.speaks)-MaxList:]
	}
}

// speaking is the places this process's ALIVEs vouch for besides its own.
func (m *Machine) speaking(now time.Time) []Owner {
	var out []Owner
	for _, s := range m.speaks {
		if now.Before(s.until) {
			out = append(out, s.place)
		}
	}
	return out
}

// dropTaken drops from a new L the places this process took (their
// leavers vouch no more, and it speaks for them to others only): in a
// ring whose lists come round its own L can name its former successor.
// An exclusion of it counts such an entry banned only with its own
// acknowledgement, which as a process of E_pq it never gives (counted),
// so a strict majority of every list it may hold stays banned in the
// shorter one.
func (m *Machine) dropTaken(l []Owner) []Owner {
	if len(m.speaks) == 0 {
		return l
	}
	return slices.DeleteFunc(l, func(o Owner) bool {
		return slices.ContainsFunc(m.speaks, func(s spoken) bool { return s.place == o && m.now.Before(s.until) })
	})
}

// heardFor records the places an ALIVE's sender speaks for, for the
// entries of L at those places.
func (m *Machine) heardFor(now time.Time, from node.ID, msg Msg) {
	for _, o := range msg.Preds {
		if o.ID != from && o.ID != m.cfg.ID && slices.Contains(m.preds, o) {
			m.heard(now, o, msg.Stretch, msg.Echo)
		}
	}
}

// olds is what a new process of this member inherits from the last one:
// its places still answered for, and the last one's own place.
func (m *Machine) olds(now time.Time) []oldPlace {
	out := slices.DeleteFunc(slices.Clone(m.oldPlaces), func(p oldPlace) bool { return !now.Before(p.until) })
	if m.n == 0 || m.ticket >= m.n {
		return out
	}
	// An excluded process may have been leaving: its CLEAVE may have been
	// served, and the taker speaks for its place.
	if m.st == stLeaving || m.st == stLeft || m.st == stExcluded {
		out = append(out, oldPlace{place: Owner{Ticket: m.ticket, ID: m.cfg.ID}, via: slices.Clone(m.cleaveTo), until: now.Add(m.keepOld())})
	}
	return out
}

// answers is what a vote answers for (ACKCOORD): the places, and for
// each a process its CLEAVE went to.
func (m *Machine) answers(now time.Time) (places, via []Owner) {
	all := m.olds(now)
	if m.st == stCoordinator || m.st == stLinking {
		all = append(all, oldPlace{place: Owner{Ticket: m.ticket, ID: m.cfg.ID}})
	}
	for _, p := range all {
		if !slices.Contains(places, p.place) {
			places = append(places, p.place)
		}
		for _, id := range p.via {
			v := Owner{Ticket: p.place.Ticket, ID: id}
			if !slices.Contains(via, v) {
				via = append(via, v)
			}
		}
	}
	if len(places) > MaxList {
		places = places[len(places)-MaxList:]
	}
	if len(via) > MaxList {
		via = via[len(via)-MaxList:]
	}
	return places, via
}

// noteAnswers records what a voter's ACKCOORD answers for, and asks the
// processes its places went to that have not been asked.
func (ex *exclusion) noteAnswers(from node.ID, msg Msg) (more bool) {
	if ex.answers == nil {
		ex.answers, ex.via = map[node.ID][]Owner{}, map[Owner][]node.ID{}
	}
	ex.answers[from] = slices.Clone(msg.Preds) // none: a vote for no place
	for _, v := range msg.Succs {
		o := Owner{Ticket: v.Ticket, ID: from}
		if !slices.Contains(ex.via[o], v.ID) {
			ex.via[o] = append(ex.via[o], v.ID)
		}
		if !ex.voters[v.ID] && !slices.Contains(ex.gone, v.ID) && v.ID != node.None {
			ex.voters[v.ID] = true
			more = true
		}
	}
	return more
}

// counted reports whether entry o of a list counts as banned: its
// process's ID acknowledged, answering for o (or not saying), and every
// process o's CLEAVEs went to acknowledged too. One of those inside E_pq
// never does: the chain bound covers a process of E_pq vouching for the
// ones after it, not a taker's vouch for its own L's entry, which it
// drops instead (setPreds), nor one for a process before it in a ring
// whose lists come round.
func (ex *exclusion) counted(o Owner, bug bug) bool {
	if !ex.acks[o.ID] {
		return false
	}
	if !slices.Contains(ex.answers[o.ID], o) {
		return false
	}
	if bug == bugTakerUnasked {
		return true
	}
	for _, id := range ex.via[o] {
		if !ex.acks[id] {
			return false
		}
	}
	return true
}
