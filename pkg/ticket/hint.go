package ticket

import (
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// A joiner that every coordinator rejected backs off one to two Retry
// periods before it walks the ring again (onReject), so a ticket freed
// meanwhile (a hand-back, Algorithm 2, or a reclaimed range, §4) could sit
// free in its coordinator's range that long. (The 300 to 450 ms measured
// with ticketd's 250 ms rounds came mostly from elsewhere: the new
// coordinator could not serve CJOINs until its successor took its UPDATE,
// refused while the leaver's claim stood; dropClaim ends that claim.) A
// free ticket in a range costs more than a wait: should its coordinator
// fail before the ticket is taken, its exclusion must allow for a process
// it granted that ticket to and nobody else knows yet (openTickets, one
// more stretched vouch in the chain; docs/ticketd.md "One member cut
// off"). So a coordinator remembers the joiners it rejected (waiting)
// and, once a ticket of its range is free and it serves CJOINs again,
// tells each of them at once (MsgFree). The hint decides nothing: the
// joiner sends an ordinary CJOIN, which the coordinator answers as any
// other (Algorithm 1); a hint that comes late, twice or forged costs one
// CJOIN and its answer.

// hintFor is how long a rejected joiner stays on the list: a joiner still
// joining walks the ring again within two Retry periods and is put back
// on the list by every coordinator that rejects it.
func (m *Machine) hintFor() time.Duration { return 4 * m.cfg.Retry }

// noteWaiting lists from, just rejected by this coordinator.
func (m *Machine) noteWaiting(now time.Time, from node.ID) {
	if !m.inRing() {
		return
	}
	for id, at := range m.waiting {
		if now.Sub(at) >= m.hintFor() {
			delete(m.waiting, id)
		}
	}
	m.waiting[from] = now
}

// hintFree tells the joiners it rejected lately that a ticket is free,
// once this process serves CJOINs with one to give (after every Step and
// Tick). Each is told once, in ID order (the simulator replays exactly).
func (m *Machine) hintFree(now time.Time) {
	if len(m.waiting) == 0 || m.cfg.bug == bugNoFreeHint || m.size() <= 1 || !m.serving(now) {
		return
	}
	ids := make([]node.ID, 0, len(m.waiting))
	for id, at := range m.waiting {
		if now.Sub(at) < m.hintFor() && id != m.succ {
			ids = append(ids, id)
		}
	}
	clear(m.waiting)
	slices.Sort(ids)
	for _, id := range ids {
		m.send(id, Msg{Type: MsgFree, N: m.n, Ticket: (m.ticket - 1 + m.n) % m.n})
	}
}

// onFree: a coordinator that rejected us has a free ticket now. A joiner
// backing off (no CJOIN unanswered) asks it at once; one in the middle of
// a walk asks it next, instead of the next coordinator (hinted).
func (m *Machine) onFree(now time.Time, from node.ID, msg Msg) {
	if m.st != stJoining || from == m.cfg.ID {
		return
	}
	if !m.joinSent.IsZero() {
		m.hinted = from
		return
	}
	m.askHinted(now, from, msg.Ticket)
}

// askHinted sends a CJOIN, under a new attempt, to the coordinator that
// said it has a free ticket.
func (m *Machine) askHinted(now time.Time, to node.ID, want uint32) {
	m.hinted = node.None
	m.silent = 0
	m.attempt++
	m.target, m.want = to, want
	m.joinAt = now
	m.sendJoin(now)
}

// bugNoFreeHint: a coordinator never tells the joiners it rejected that a
// ticket of its range has come free; they find it after their back-off.
// Tests only.
const bugNoFreeHint bug = 158
