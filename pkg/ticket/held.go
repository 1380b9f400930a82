package ticket

import "time"

// held dates the vouches a stalled process finds waiting when it runs
// again. Support counts an ALIVE (or UPDATE) from its receipt, and the
// quorum argument of Theorem 4.1 (§4; doc.go, "Safety") bounds the
// receipt of a voter's last ALIVE by t_v + δ, δ the links' delay. A
// process that was paused or starved breaks that bound on its own side:
// an ALIVE a voter sent before its ban may be read long after, and taken
// as fresh it would carry the process's support past the end of the
// excluder's wait. So while a round this process asked for is overdue
// (the test noteLate uses), and for δ after, a vouch is dated at the
// last instant the process ran on time: a message sent before that
// instant would have been read within δ of its sending, and one sent
// after it is dated before its sending; either way its date is at most
// its sending plus δ, as the bound needs. A vouch that echoes a later
// stamp of this process's own is dated at that stamp instead (echo.go;
// doc.go, "Busy hosts: echoed vouches").
type held struct {
	ranAt time.Time // the last Step or Tick on time (no stall under way)
	round time.Time // the overdue round the stall was noted for
	at    time.Time // what vouches read during the stall are dated
	till  time.Time // vouches read before this are dated at
}

// noteRun is called with every Step and Tick, before anything is read.
func (m *Machine) noteRun(now time.Time) {
	m.now = now
	if m.cfg.bug == bugHeldFresh || m.cfg.bug == bugHeldVouch {
		return
	}
	h := &m.held
	if m.cfg.FaultTolerant && m.inRing() && !m.roundAt.IsZero() && now.Sub(m.roundAt) >= m.lateBy() {
		if !h.round.Equal(m.roundAt) {
			h.round = m.roundAt
			if !now.Before(h.till) {
				h.at = h.ranAt // a new stall (one right after another keeps the first date)
			}
		}
		h.till = now.Add(m.cfg.Delta)
		return
	}
	if !now.Before(h.till) {
		h.ranAt = now
	}
}

// vouchAt is the time a vouch read at now counts from.
func (m *Machine) vouchAt(now time.Time) time.Time {
	if now.Before(m.held.till) && m.held.at.Before(now) {
		return m.held.at
	}
	return now
}

// bugHeldFresh: a process dates every vouch at its receipt, so one that
// wakes from a stall with its support still running takes the ALIVEs
// its voters sent before their ban as fresh. Tests only.
const bugHeldFresh bug = 130
