package ticket

import (
	"fmt"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// A confirmed leave (doc.go, "A hand-back beside a cut"). A hand-back
// shifts the Ls of the leaver's 2k+1 successors; each is brought up to
// date by an UPDATE passed down the ring from the leaver's predecessor
// (updateNow). Should one of the processes on that path have fallen
// silent (cut off, stopped, crashed) just before, the Ls past it keep
// naming the leaver, which vouches for nobody any more, until the silent
// one has been excluded: with k = 1 a process whose L names both keeps
// one voucher of the two it needs, stops acting, and those after it
// follow. Settled cannot see a silence younger than a round and a half
// (ALIVEs come once a round). So a leave first asks every process it
// counts on or vouches for (L and its 2k+1 closest successors) for an
// answer (MsgPing, MsgPong), and gives the ticket back only once all have
// answered within a round; otherwise it keeps the ticket
// (LeaveHeldEvent), and the service asks again later. What is left is
// the time between the last answer and the UPDATEs' arrival: message
// delays, not rounds.

// leaveCheck is a leave waiting for its neighbours' answers.
type leaveCheck struct {
	nonce   uint64
	until   time.Time
	waiting map[node.ID]bool
}

// LeaveHeldEvent: a leave was asked for, and the process keeps its
// ticket: Silent did not answer within a round (a hand-back now could
// cost a live process its support), or the ticket was lent meanwhile.
type LeaveHeldEvent struct {
	Event  string    `json:"event"` // "kept"
	Ticket uint32    `json:"ticket"`
	Silent []node.ID `json:"silent,omitempty"`
}

func (e LeaveHeldEvent) Kind() string { return "kept" }
func (e LeaveHeldEvent) String() string {
	if len(e.Silent) == 0 {
		return fmt.Sprintf("kept %d", e.Ticket)
	}
	return fmt.Sprintf("kept %d (no answer from %v)", e.Ticket, e.Silent)
}

// confirmLeave starts the check, and reports whether the leave must wait
// for it.
func (m *Machine) confirmLeave(now time.Time) bool {
	if !m.cfg.FaultTolerant || m.cfg.bug == bugLeaveUnconfirmed {
		return false
	}
	if m.leaveCheck != nil {
		return true // under way
	}
	c := &leaveCheck{nonce: m.cfg.Rand.Uint64() | 1, until: now.Add(m.cfg.Round), waiting: map[node.ID]bool{}}
	ask := func(o Owner) {
		if o.ID == m.cfg.ID || c.waiting[o.ID] {
			return
		}
		c.waiting[o.ID] = true
		m.send(o.ID, Msg{Type: MsgPing, Attempt: c.nonce, Ticket: o.Ticket})
	}
	for _, o := range m.preds {
		ask(o)
	}
	sent := 0
	for _, o := range m.succs {
		if sent == 2*m.cfg.K+1 {
			break
		}
		if o.ID != m.cfg.ID {
			ask(o)
			sent++
		}
	}
	if len(c.waiting) == 0 {
		return false
	}
	m.leaveCheck = c
	return true
}

// onPing: a neighbour about to leave asks whether we hold the place it
// knows us at (NoTicket: a founder's first predecessor, known by ID until
// its first UPDATE).
func (m *Machine) onPing(from node.ID, msg Msg) {
	if m.inRing() && (msg.Ticket == m.ticket || msg.Ticket == NoTicket) {
		m.send(from, Msg{Type: MsgPong, Attempt: msg.Attempt, Ticket: m.ticket})
	}
}

// onPong: one more answer; with the last, the leave goes ahead, if
// nothing has begun meanwhile that a leave would disturb.
func (m *Machine) onPong(now time.Time, from node.ID, msg Msg) {
	c := m.leaveCheck
	if c == nil || msg.Attempt != c.nonce || !c.waiting[from] {
		return
	}
	delete(c.waiting, from)
	if len(c.waiting) > 0 {
		return
	}
	m.leaveCheck = nil
	if m.st != stCoordinator || m.temp != nil || m.ex != nil || m.await || !m.supported(now) {
		m.events = append(m.events, LeaveHeldEvent{Event: "kept", Ticket: m.ticket})
		return
	}
	m.handBack(now)
}

// leaveTimer: no answer from some within the round, the ticket is kept.
func (m *Machine) leaveTimer(now time.Time) {
	c := m.leaveCheck
	if c == nil || now.Before(c.until) {
		return
	}
	m.leaveCheck = nil
	var silent []node.ID
	for id := range c.waiting {
		silent = append(silent, id)
	}
	slices.Sort(silent)
	m.events = append(m.events, LeaveHeldEvent{Event: "kept", Ticket: m.ticket, Silent: silent})
}

// cancelLeave: the ticket is lent while a leave waits for its answers;
// the lend wins, and the service asks again once it is back.
func (m *Machine) cancelLeave() {
	if m.leaveCheck != nil && m.cfg.bug != bugLendKeepsLeave {
		m.leaveCheck = nil
		m.events = append(m.events, LeaveHeldEvent{Event: "kept", Ticket: m.ticket})
	}
}

// bugLendKeepsLeave: a lend leaves a pending leave in place, and the
// ticket is given back while a command holds it. Tests only.
const bugLendKeepsLeave bug = 154

// bugLeaveUnconfirmed: a leave gives the ticket back at once, without
// its neighbours' answers, and (as before it) nobody speaks for the
// place given back (speak.go), which since covers the same window on its
// own. Tests only.
const bugLeaveUnconfirmed bug = 151
