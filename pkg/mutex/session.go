package mutex

import (
	"cmp"
	"encoding/binary"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Session renewals (doc.go, rule 4): a member renews every lock it holds
// with one MsgSession per eighth of a lease, instead of one record per
// lock, so that the coordinator's work per renewal period grows with the
// members, not with the locks held. A lock enters its member's session
// with its first per-lock renewal (the member counts it in from when it
// sends that renewal, the coordinator from when it takes it), and leaves
// it when it is released, lost or given up. Both sides keep the session's
// count and digest (an XOR of one hash per lock); the coordinator extends
// the session only when the member's count and digest equal its own, and
// says which it has; the member extends only the locks that were in its
// session when it sent the renewal the coordinator matched.

// sessHash is one lock's share of a session digest: its name, client and
// token, which the member and the coordinator both know.
func sessHash(name string, client, token uint64) uint64 {
	h := uint64(14695981039346656037) // FNV-1a
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return mix(mix(h^client) ^ token)
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// digest is a session's count of locks and the XOR of their hashes.
type digest struct{ count, xor uint64 }

func (d *digest) flip(h uint64, in bool) {
	if in {
		d.count++
	} else {
		d.count--
	}
	d.xor ^= h
}

// sessSend is one session renewal a member sent: when, and the session
// (its version and digest) it renewed.
type sessSend struct {
	at  time.Time
	ver uint64
	d   digest
}

// --- member side

// join counts a held request in the member's session, from now on: the
// per-lock renewal about to go makes the coordinator count it in too.
func (m *central) join(r *request) {
	if r.inSess || !r.held {
		return
	}
	m.sessVer++
	r.inSess, r.joinVer = true, m.sessVer
	m.sess.flip(sessHash(r.key.name, r.key.client, r.token), true)
	m.joining[r.key] = true
}

// leave takes a request out of the member's session (it is dropped).
func (m *central) leave(r *request) {
	if !r.inSess {
		return
	}
	m.sessVer++
	r.inSess = false
	m.sess.flip(sessHash(r.key.name, r.key.client, r.token), false)
	delete(m.joining, r.key)
}

// resetSession empties the member's session: a new coordinator knows none.
func (m *central) resetSession() {
	for _, r := range m.reqs {
		r.inSess = false
	}
	m.sessVer++
	m.sess = digest{}
	clear(m.joining)
	clear(m.sessSent)
	m.sessAckVer, m.sessUntil, m.sessNext = 0, time.Time{}, time.Time{}
	m.sessReleases = nil
}

// validity is how long r's lease lasts: its own, or the session's when a
// session renewal sent after r joined was matched.
func (m *central) validity(r *request) time.Time {
	if r.inSess && r.joinVer <= m.sessAckVer && m.sessUntil.After(r.validUntil) {
		return m.sessUntil
	}
	return r.validUntil
}

// sendSession renews the session, if it has locks and one is due.
func (m *central) sendSession(now time.Time) {
	if m.coord == node.None || m.sess.count == 0 || now.Before(m.sessNext) {
		return
	}
	m.sessSeq++
	m.sessSent[m.sessSeq] = sessSend{at: now, ver: m.sessVer, d: m.sess}
	delete(m.sessSent, m.sessSeq-16)
	m.sessNext = now.Add(m.cfg.Lease / 8)
	m.send(m.coord, Msg{Type: MsgSession, Term: m.term, Seq: m.sessSeq, Client: m.sess.count, Attempt: m.sess.xor})
}

func (m *central) onSessionAck(now time.Time, from node.ID, msg Msg) {
	if from != m.coord || msg.Term != m.term {
		return
	}
	sent, ok := m.sessSent[msg.Seq]
	if !ok {
		return
	}
	if sent.d == (digest{msg.Client, msg.Attempt}) {
		// The coordinator counted exactly our session when it took the
		// renewal: every lock in it when we sent it is good for 0.9·L
		// from then (rule 2).
		if v := sent.at.Add(time.Duration(safety * float64(m.cfg.Lease))); v.After(m.sessUntil) && sent.ver >= m.sessAckVer {
			m.sessUntil, m.sessAckVer = v, sent.ver
		}
		m.sessReleases = nil
		return
	}
	// The sessions differ: a joining renewal or a release was lost, or
	// is still on its way. Send again the joining renewals whose answer
	// is overdue (an eighth of a lease), at most renewBurst bytes of them
	// (a starved coordinator must not be flooded), and the releases; a
	// lock the coordinator no longer counts falls back to per-lock
	// renewals as its lease runs short, and is revoked there.
	var renewals []LockRec
	keys := make([]reqKey, 0, len(m.joining))
	for k := range m.joining {
		keys = append(keys, k)
	}
	sortKeys(keys)
	size := 0
	for _, k := range keys {
		r := m.reqs[k]
		if r == nil || !r.held || now.Sub(r.sent[r.seq]) < m.cfg.Lease/8 {
			continue
		}
		if size += len(k.name) + 4*binary.MaxVarintLen64; size > renewBurst {
			break
		}
		renewals = append(renewals, m.renewal(now, k, r))
	}
	m.sendRenewals(renewals)
	for _, rel := range m.sessReleases {
		m.send(m.coord, rel)
	}
}

// maxSessReleases bounds the releases a member keeps to send again.
const maxSessReleases = 256

// released notes a release of a lock that was in the session, to send
// again if the coordinator's session still counts it.
func (m *central) released(r *request, rel Msg) {
	if r.inSess && len(m.sessReleases) < maxSessReleases {
		m.sessReleases = append(m.sessReleases, rel)
	}
}

// --- coordinator side

// session is the coordinator's account of one member's session.
type session struct {
	d     digest
	until time.Time // the session's leases run until then
	locks map[*lock]bool
}

func (m *central) sessionOf(n node.ID) *session {
	s := m.sessions[n]
	if s == nil {
		s = &session{locks: map[*lock]bool{}}
		m.sessions[n] = s
	}
	return s
}

// enter counts l's holder in its member's session (a per-lock renewal of
// it arrived).
func (m *central) enter(l *lock) {
	h := l.holder
	if h == nil || h.inSess {
		return
	}
	s := m.sessionOf(h.node)
	s.d.flip(sessHash(l.name, h.client, h.token), true)
	s.locks[l] = true
	h.inSess = true
	// The session holds at least as long as the lease just renewed (a
	// coordinator that holds longer is only more careful).
	s.until = laterOf(s.until, h.expires)
	m.tidy(l)
}

// exit takes l's holder out of its session, keeping the lease the session
// gave it.
func (m *central) exit(l *lock) {
	h := l.holder
	if h == nil || !h.inSess {
		return
	}
	s := m.sessions[h.node]
	s.d.flip(sessHash(l.name, h.client, h.token), false)
	delete(s.locks, l)
	h.inSess = false
	h.expires = laterOf(h.expires, s.until)
}

// setHolder replaces l's holder (nil: none).
func (m *central) setHolder(l *lock, h *holder) {
	m.exit(l)
	l.holder = h
}

func (m *central) onSession(now time.Time, from node.ID, msg Msg) {
	if !m.majority(now) {
		return // no answer: the member's leases run on their own
	}
	var d digest
	s := m.sessions[from]
	if s != nil {
		d = s.d
	}
	if m.cfg.sessionTrust {
		d = digest{msg.Client, msg.Attempt}
	}
	if s != nil && d == (digest{msg.Client, msg.Attempt}) {
		s.until = laterOf(s.until, now.Add(m.cfg.Lease))
	}
	m.send(from, Msg{Type: MsgSessionAck, Term: m.term, Seq: msg.Seq, Client: d.count, Attempt: d.xor})
}

// expireSessions ends the sessions that were not renewed for a lease:
// their locks fall back to their own leases, which have run out too
// unless per-lock renewals kept them.
func (m *central) expireSessions(now time.Time) {
	var ended []node.ID
	for n, s := range m.sessions {
		if !now.Before(s.until) {
			ended = append(ended, n)
		}
	}
	slices.Sort(ended)
	for _, n := range ended {
		s := m.sessions[n]
		locks := make([]*lock, 0, len(s.locks))
		for l := range s.locks {
			locks = append(locks, l)
		}
		slices.SortFunc(locks, func(a, b *lock) int { return cmp.Compare(a.order, b.order) })
		for _, l := range locks {
			m.exit(l)
			m.tidy(l)
		}
		delete(m.sessions, n)
	}
}
