package ticket

import "time"

// bugHeldVouch: a process counts an ALIVE or UPDATE before it checks its
// support, so one that wakes from a pause takes the vouches waiting in
// its socket as fresh although its support ran out while it slept
// (doc.go, "Liveness": support is checked before every message). Only a
// driver that hands a resumed process its queued messages before its
// first tick shows it (sim.Options.HeldFirst). It dates those vouches at
// their reading too (bugHeldFresh, held.go): dated at the last instant
// the process ran on time they could not bring back its support, and
// the missing check would go unseen. Tests only.
const bugHeldVouch bug = 128

// heldVouchBug reports whether the planted bugHeldVouch skips the support
// check before a message of type t.
func (m *Machine) heldVouchBug(t MsgType) bool {
	return m.cfg.bug == bugHeldVouch && (t == MsgAlive || t == MsgUpdate)
}

// bugStrandedVouch: a process that lost its support goes on sending
// ALIVEs to its 2k+1 closest successors once a round, the re-support
// rule doc.go shows unsafe ("Why a stranded process is not
// re-supported"). Tests only.
const bugStrandedVouch bug = 129

// strandedVouch sends the planted bugStrandedVouch's ALIVEs when a round
// is due.
func (m *Machine) strandedVouch(now time.Time) {
	if m.cfg.bug != bugStrandedVouch || m.st != stExcluded || now.Before(m.roundAt) {
		return
	}
	m.roundAt = now.Add(m.cfg.Round)
	sent := 0
	for _, o := range m.succs {
		if sent == 2*m.cfg.K+1 {
			break
		}
		if o.ID != m.cfg.ID && !m.banned(now, o.Ticket) {
			m.send(o.ID, Msg{Type: MsgAlive, Ticket: o.Ticket})
			sent++
		}
	}
}

// strandedWake is when the planted bugStrandedVouch's next ALIVEs are due.
func (m *Machine) strandedWake() time.Time {
	if m.cfg.bug == bugStrandedVouch && m.st == stExcluded {
		return m.roundAt
	}
	return time.Time{}
}
