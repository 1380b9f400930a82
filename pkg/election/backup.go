package election

import (
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Claims with backups (Arantes and Sopena, "A fault tolerant token ring
// plug-in", §II Fig. 2 and §III "leader election"): with Config.Backups
// = k > 0, Chang–Roberts' claim (the circulating election message) is a
// token that is never lost while at most k consecutive members crash.
//
//   - SafeSendToken: the process passing a claim on sends it, unacknowledged,
//     to its k+1 next members; the first of them holds it next (REAL), the
//     k others keep a BACKUP copy. The claim carries an emission count.
//   - SafeReceiveToken: a copy whose count is not above the newest one seen
//     is old and ignored. The holder handles the claim by Chang–Roberts'
//     rules; a backup records its detection set D, the receivers from the
//     holder up to itself, and monitors the others in D (at most k).
//   - UseBackup: when every other member of D is suspected, the backup
//     holds the claim: it adds the members it skipped to the count (so that
//     copies emitted before are old) and handles the claim as the holder
//     would have.
//
// Monitoring is a probe every Heartbeat to each watched member, answered by
// an acknowledgement; Timeout without a word from it is a crash. Only the
// probes are acknowledged: the copies are not (§II: "k additional messages
// per emission").

// claimToken is this process's view of one claim, keyed by its origin and
// circulation number.
type claimToken struct {
	cand  Member    // the candidate
	term  uint64    // the claim's term field
	count uint64    // the newest emission seen (Fig. 2 "count")
	det   []node.ID // BACKUP: D without this process, nearest the holder first; nil otherwise
	done  bool      // this process held the claim already: a later lap is dropped
	at    time.Time // last change, for expiry
}

// watch is one monitored process.
type watch struct {
	heard time.Time // last message from it
	probe time.Time // next probe due
}

// backupBug plants bugs for the claim checker. Tests only.
type backupBug uint8

const (
	bugNone backupBug = iota
	// bugOldCopy takes every copy, even one older than the newest seen
	// (no count check in SafeReceiveToken).
	bugOldCopy
	// bugEager regenerates as soon as the designated holder is suspected,
	// without waiting for the rest of the detection set.
	bugEager
)

// backups is the Machine's claim-backup state.
type backups struct {
	claims  map[ringKey]*claimToken
	watched map[node.ID]*watch
	faulty  map[node.ID]time.Time // suspected by the monitor (Fig. 2 "F")
}

func (m *Machine) withBackups() bool { return m.cfg.Backups > 0 && m.cfg.Algo == ChangRoberts }

func (m *Machine) claimOf(origin node.ID, round uint64) *claimToken {
	if m.bk.claims == nil {
		m.bk.claims = map[ringKey]*claimToken{}
		m.bk.watched = map[node.ID]*watch{}
		m.bk.faulty = map[node.ID]time.Time{}
	}
	k := ringKey{MsgClaim, origin, round}
	c := m.bk.claims[k]
	if c == nil {
		c = &claimToken{}
		m.bk.claims[k] = c
	}
	return c
}

// claimSend passes a Chang–Roberts claim on: through the acknowledged
// ring without backups, by SafeSendToken with them.
func (m *Machine) claimSend(now time.Time, msg Msg) {
	if !m.withBackups() {
		m.ringSend(now, msg)
		return
	}
	c := m.claimOf(msg.Origin, msg.Round)
	c.cand, c.term, c.det, c.done, c.at = msg.Members[0], msg.Term, nil, true, now
	// The k+1 next members not known to have crashed.
	var to []node.ID
	i := m.index[m.cfg.ID]
	for j := 1; j < len(m.peers) && len(to) <= m.cfg.Backups; j++ {
		p := m.peers[(i+j)%len(m.peers)]
		if !m.isDown(p, now) && !m.suspected(p) {
			to = append(to, p)
		}
	}
	if len(to) == 0 {
		// Every other process is down: the claim comes straight back.
		if msg.Origin == m.cfg.ID {
			m.ringArrive(now, Msg{Type: MsgElection, Origin: msg.Origin, Round: msg.Round, Term: msg.Term})
		}
		return
	}
	c.count++
	out := Msg{Type: MsgClaim, Origin: msg.Origin, Round: msg.Round, Term: msg.Term, Leader: msg.Leader,
		Count: c.count, Members: append([]Member{msg.Members[0]}, make([]Member, len(to))...)}
	for j, p := range to {
		out.Members[1+j] = Member{ID: p}
	}
	if m.cfg.onEmit != nil {
		m.cfg.onEmit(m.cfg.ID, msg.Origin, msg.Round, c.count, to)
	}
	for _, p := range to {
		m.send(p, out)
	}
}

// takeClaim is SafeReceiveToken (Fig. 2, lines 23–35).
func (m *Machine) takeClaim(now time.Time, msg Msg) {
	if len(msg.Members) < 2 {
		return
	}
	c := m.claimOf(msg.Origin, msg.Round)
	if msg.Count <= c.count && m.cfg.backupBug != bugOldCopy {
		return // an old copy (line 25)
	}
	c.count = max(c.count, msg.Count)
	c.cand, c.term, c.at = msg.Members[0], msg.Term, now
	if c.cand.ID != node.None {
		m.prio[c.cand.ID] = c.cand.Prio
	}
	var det []node.ID
	self := false
	for _, mb := range msg.Members[1:] {
		if mb.ID == m.cfg.ID {
			self = true
			break
		}
		det = append(det, mb.ID)
	}
	if !self {
		return
	}
	if len(det) == 0 {
		m.holdClaim(now, msg.Origin, msg.Round, c) // we are the next holder (line 28)
		return
	}
	c.det = det
	for _, p := range det {
		m.watchProc(now, p)
	}
	m.checkBackup(now, msg.Origin, msg.Round, c)
}

// checkBackup: a backup whose detection set has crashed, itself apart,
// uses its copy (Fig. 2, lines 31 and 38).
func (m *Machine) checkBackup(now time.Time, origin node.ID, round uint64, c *claimToken) {
	if c.det == nil {
		return
	}
	all := true
	for _, p := range c.det {
		if !m.suspected(p) {
			all = false
		}
	}
	if m.cfg.backupBug == bugEager && m.suspected(c.det[0]) {
		all = true
	}
	if !all {
		return
	}
	// UseBackup (lines 38–43): count the skipped members so that copies
	// emitted before this one are old.
	c.count += uint64(len(c.det))
	c.det = nil
	if m.cfg.onBackup != nil {
		m.cfg.onBackup(m.cfg.ID, origin, round)
	}
	m.holdClaim(now, origin, round, c)
}

// holdClaim: this process holds the claim (DeliverToken) and applies
// Chang–Roberts' rules to it.
func (m *Machine) holdClaim(now time.Time, origin node.ID, round uint64, c *claimToken) {
	c.det = nil
	if m.cfg.onHold != nil {
		m.cfg.onHold(m.cfg.ID, origin, round, c.count)
	}
	msg := Msg{Type: MsgElection, Origin: origin, Round: round, Term: c.term, Leader: c.cand.ID,
		Members: []Member{c.cand}}
	if origin == m.cfg.ID {
		m.ringArrive(now, msg) // our own claim came back: we lead (if it is our current one)
		return
	}
	if c.done {
		return // a second lap: the origin is gone (as ringArrive lets it die)
	}
	c.done = true
	if m.suspected(c.cand.ID) || m.isDown(c.cand.ID, now) {
		// §III, UpdateToken: the candidate has crashed; a claim of ours
		// replaces it.
		if !m.leading && !m.electing {
			m.campaign(now)
		}
		return
	}
	m.observe(now, msg.Term)
	changRoberts{ring{common{m}}}.take(now, msg)
}

// settledClaims: a leader of term t is known, so the claims of earlier
// elections have finished (swallowed by a better process or completed):
// their backups stop watching, so that a crash after the election does
// not bring an old claim back.
func (m *Machine) settledClaims(t uint64) {
	for _, c := range m.bk.claims {
		if c.term < t {
			c.det = nil
		}
	}
}

func (m *Machine) suspected(p node.ID) bool {
	_, ok := m.bk.faulty[p]
	return ok
}

func (m *Machine) watchProc(now time.Time, p node.ID) {
	if m.suspected(p) {
		return
	}
	if w := m.bk.watched[p]; w == nil {
		m.bk.watched[p] = &watch{heard: now, probe: now}
	}
}

// heardFrom: any message shows p is alive.
func (m *Machine) heardFrom(now time.Time, p node.ID) {
	if m.bk.claims == nil {
		return
	}
	delete(m.bk.faulty, p)
	if w := m.bk.watched[p]; w != nil {
		w.heard = now
	}
}

// backupTick probes the watched processes, suspects the silent ones, and
// forgets claims and watches no longer needed.
func (m *Machine) backupTick(now time.Time) {
	if m.bk.claims == nil {
		return
	}
	for k, c := range m.bk.claims {
		if now.Sub(c.at) > 10*m.cfg.Timeout {
			delete(m.bk.claims, k)
		}
	}
	needed := map[node.ID]bool{}
	for _, c := range m.bk.claims {
		for _, p := range c.det {
			needed[p] = true
		}
	}
	ps := make([]node.ID, 0, len(m.bk.watched))
	for p := range m.bk.watched {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	var crashed bool
	for _, p := range ps {
		w := m.bk.watched[p]
		switch {
		case !needed[p]:
			delete(m.bk.watched, p)
		case now.Sub(w.heard) >= m.cfg.Timeout:
			delete(m.bk.watched, p)
			m.bk.faulty[p] = now
			crashed = true
		case !w.probe.After(now):
			m.send(p, Msg{Type: MsgProbe})
			w.probe = now.Add(m.cfg.Heartbeat)
		}
	}
	for p, t := range m.bk.faulty {
		if now.Sub(t) > downFor*m.cfg.Timeout {
			delete(m.bk.faulty, p)
		}
	}
	if !crashed {
		return
	}
	keys := make([]ringKey, 0, len(m.bk.claims))
	for k := range m.bk.claims {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ringKey) int {
		if a.origin != b.origin {
			return int(a.origin) - int(b.origin)
		}
		return cmpU64(a.round, b.round)
	})
	for _, k := range keys {
		m.checkBackup(now, k.origin, k.round, m.bk.claims[k])
	}
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// backupWake is the next probe or suspicion due.
func (m *Machine) backupWake() time.Time {
	var t time.Time
	for _, w := range m.bk.watched {
		for _, d := range []time.Time{w.probe, w.heard.Add(m.cfg.Timeout)} {
			if t.IsZero() || d.Before(t) {
				t = d
			}
		}
	}
	return t
}
