package ticket

import (
	"maps"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// epochJump is how far a reclaimed ticket's epoch jumps above the highest
// epoch this process has heard of: the excluded processes may have handed
// tickets out since their last word reached it (doc.go, "Fencing").
const epochJump = 1 << 32

// exclusion is Algorithm 5 in progress at the excluder p.
type exclusion struct {
	id   uint64
	idx  int       // the candidate's index in succs
	cand Owner     // q: the candidate new successor
	gone []node.ID // E_pq's processes: the successors closer than q
	// goneOwners are the same with their tickets, for REQCOORD: a voter
	// bans for as long as the excluder waits, which grows with them.
	goneOwners []Owner
	deadline   time.Time
	asked      bool // REQCOORD sent
	tries      int  // sends of the current request
	resend     time.Time
	lists      [][]Owner // every L the successor may hold
	voters     map[node.ID]bool
	acks       map[node.ID]bool
	answers    map[node.ID][]Owner // the places each voter answers for
	via        map[Owner][]node.ID // where each left place's CLEAVEs went (speak.go)
	granted    int                 // the highest factor a voter reported granting (waitFor)
}

// temporary is a temporary coordinator's state (§4): until it ends, the
// process serves no CJOIN, sends no UPDATE, and E_pq is not yet its own.
type temporary struct {
	until time.Time
	q     Owner
	gone  []node.ID  // the processes of E_pq, for ReclaimedEvent
	ex    *exclusion // the attempt whose quorum it waits for (its voters' bans must outlast the wait)
}

// ban is a voter's promise (ACKCOORD): no ALIVE to the tickets strictly
// between from and to, until the temporary coordinator is done.
type ban struct {
	from, to uint32
	until    time.Time
}

// between reports whether t lies strictly between from and to going down
// the ring (from's successors up to, not including, to).
func (m *Machine) between(from, to, t uint32) bool {
	d := (from - t + m.n) % m.n
	return d > 0 && d < (from-to+m.n)%m.n || from == to && t != from
}

func (m *Machine) banned(now time.Time, t uint32) bool {
	if m.n == 0 {
		return false
	}
	for _, b := range m.bans {
		if now.Before(b.until) && m.between(b.from, b.to, t) {
			return true
		}
	}
	return false
}

// dist is how far t lies down the ring from this process's ticket.
func (m *Machine) dist(t uint32) uint32 { return (m.ticket - t + m.n) % m.n }

// beyondBan reports whether t lies at or past the far end of a range this
// process promised not to vouch for (going down the ring from here). A
// ban that has ended counts until exclusionTimers drops it (keepPast).
func (m *Machine) beyondBan(now time.Time, t uint32) bool {
	for _, b := range m.bans {
		if m.beyond(b, t) {
			return true
		}
	}
	return false
}

func (m *Machine) beyond(b ban, t uint32) bool {
	return m.dist(t) >= m.dist(b.to) && m.dist(b.from) < m.dist(b.to)
}

// keepPast: a ban has ended. The successors past it were kept (neither
// forgotten nor stale) while it lasted, since nobody could tell us of
// them; their new R is only now on its way, and they still count on our
// ALIVEs. Forgetting the ones last heard of more than forgetSucc windows
// ago at once would take our ALIVEs from them before an INTRO can bring
// them back, and one whose L holds us loses its support (doc.go, "Why
// the longer wait seemed to strand live processes"). They become stale
// instead (fill-ups, forgotten forgetSucc−1 windows later unless heard
// of again).
func (m *Machine) keepPast(now time.Time, b ban) {
	news := now
	if m.lastNews.Before(now) {
		news = m.lastNews
	}
	stale := news.Add(-m.window())
	for id, k := range m.known {
		if m.beyond(b, k.ticket) && k.at.Before(stale) {
			k.at = stale
			m.known[id] = k
		}
	}
}

// keptFresh reports whether a successor at t counts as fresh in
// recompute because it lies past a range this process voted to exclude:
// only while this process's own successor is outside that range. A voter
// still hears from its successor, whose ACKUPDATE (a temporary
// coordinator's, naming neither E_pq nor all beyond it) would otherwise
// age the processes past the ban that count on the voter's ALIVEs. The
// excluder hears nothing while its successor is banned, so what it last
// heard stays exactly as fresh as it was: counting everything past the
// ban as fresh would let a process long gone (crashed, excluded by
// another, only not yet forgotten) take the place of a live one among
// its 2k+1, and that one, whose L holds the excluder (§4: L is drawn
// from R_p), would lose its support (doc.go, "Why the longer wait seemed
// to strand live processes").
func (m *Machine) keptFresh(now time.Time, t uint32) bool {
	return m.beyondBan(now, t) && !m.banned(now, m.succTicket)
}

// startExclusion: Algorithm 5. The successor did not acknowledge an
// UPDATE for Suspect rounds; ask the next successors in turn to become
// ours (EXCLUDE). The seed runs this with probability P_exclude; only the
// immediate predecessor ever starts it, so P_exclude = 1 here.
func (m *Machine) startExclusion(now time.Time) {
	if len(m.succs) < 2 {
		return // nobody beyond the successor is known: support decides
	}
	m.exID++
	m.ex = &exclusion{id: m.exID, idx: 0}
	m.nextCandidate(now)
}

func (m *Machine) nextCandidate(now time.Time) {
	ex := m.ex
	for ex.idx++; ex.idx < len(m.succs); ex.idx++ {
		if c := m.succs[ex.idx]; c.ID != m.cfg.ID && c.ID != m.succ {
			ex.cand = c
			// E_pq's processes: every successor closer than q (the
			// successor first). They are excluded with their tickets.
			ex.gone, ex.goneOwners = ex.gone[:0], ex.goneOwners[:0]
			for _, o := range m.succs[:ex.idx] {
				if o.ID != m.cfg.ID && !slices.Contains(ex.gone, o.ID) {
					ex.gone = append(ex.gone, o.ID)
					ex.goneOwners = append(ex.goneOwners, o)
				}
			}
			ex.tries, ex.resend = 1, now.Add(m.cfg.Delta)
			ex.deadline = now.Add(m.candidateWait())
			m.send(c.ID, Msg{Type: MsgExclude, Attempt: ex.id})
			if m.cfg.Phases {
				m.events = append(m.events, ExcludingEvent{Event: "excluding", From: m.ticket, To: c.Ticket})
			}
			return
		}
	}
	m.ex = nil // nobody answered: try again next round
}

// onExclude: "On q receives EXCLUDE: reply ACKEXCLUDE(L_q)".
func (m *Machine) onExclude(from node.ID, msg Msg) {
	// A leaving process answers too: the excluder becomes its
	// predecessor and serves its CLEAVE once its wait is over (a leaver
	// whose predecessor was cut off before serving it would otherwise
	// never be served, and the exclusion would have to take it in
	// E_pq, whose candidate may hold an L of two that names it).
	leaving := m.st == stLeaving && m.cfg.FaultTolerant && m.cfg.bug != bugNoHandL
	if m.st != stCoordinator && m.st != stLinking && !leaving {
		return
	}
	m.send(from, Msg{Type: MsgAckExclude, Attempt: msg.Attempt, Ticket: m.ticket, Preds: m.preds})
}

// onAckExclude: ask the voters (R_p outside E_pq) to acknowledge E_pq.
func (m *Machine) onAckExclude(now time.Time, from node.ID, msg Msg) {
	ex := m.ex
	if ex == nil || ex.asked || from != ex.cand.ID || msg.Attempt != ex.id || msg.Ticket != ex.cand.Ticket {
		return
	}
	// The successor's L is one of the Rs sent to it since it last
	// acknowledged one (or that one), cut where the successor cuts it. A
	// strict majority of each must stop vouching (doc.go, "Safety").
	rs := m.sentRs
	if len(rs) == 0 {
		rs = [][]Owner{m.ownR()}
	}
	succ := Owner{Ticket: m.succTicket, ID: m.succ}
	ex.lists = ex.lists[:0]
	for _, r := range rs {
		ex.lists = append(ex.lists, lFor(aroundOnce(r, succ), succ.ID, 2*m.cfg.K+1, m.n))
	}
	ex.voters, ex.acks = map[node.ID]bool{}, map[node.ID]bool{}
	// Voters: every process of those lists outside E_pq (this process,
	// and q itself in a ring shorter than 2k+2). The seed asks L_q ∩ R_p;
	// but L_q is stale when q's predecessor crashed before it passed a
	// newcomer on, and the intersection then lacks the newcomer that the
	// successor's L may hold, so the quorum could never be met and the
	// crashed ticket never reclaimed (doc.go, "Liveness").
	// A voter's only duty is to stop vouching for E_pq, which any member
	// of R_p outside E_pq can do; q's answer shows that q is alive.
	for _, l := range ex.lists {
		for _, o := range l {
			if o.Ticket < m.n && !m.between(m.ticket, ex.cand.Ticket, o.Ticket) {
				ex.voters[o.ID] = true
			}
		}
	}
	if !ex.quorum(ex.voters) {
		m.ex = nil // not enough voters that q and we share: retry later
		return
	}
	ex.asked = true
	ex.tries, ex.resend = 1, now.Add(m.cfg.Delta)
	ex.deadline = now.Add(exTries * m.cfg.Delta)
	m.selfVote(now)
	m.askVoters()
	m.maybeTemp(now)
}

// quorum reports whether the set holds a strict majority of every list
// the successor may hold as its L (an empty L gives no support; it needs
// none).
func (ex *exclusion) quorum(set map[node.ID]bool) bool {
	return ex.majorityOf(func(o Owner) bool { return set[o.ID] })
}

// quorumBanned reports whether a strict majority of every list the
// successor may hold counts as banned (counted, speak.go).
func (ex *exclusion) quorumBanned(bug bug) bool {
	return ex.majorityOf(func(o Owner) bool { return ex.counted(o, bug) })
}

// majorityOf reports whether the entries for which in holds are a strict
// majority of every list (an empty list needs none).
func (ex *exclusion) majorityOf(in func(Owner) bool) bool {
	for _, l := range ex.lists {
		n := 0
		for _, o := range l {
			if in(o) {
				n++
			}
		}
		if len(l) > 0 && n < exclusionQuorum(len(l)) {
			return false
		}
	}
	return true
}

// lFor is the L that process self makes of a list of predecessors: at
// most max, without itself, duplicates or tickets out of range (trim, as
// the receiver runs it).
func lFor(l []Owner, self node.ID, max int, n uint32) []Owner {
	out := make([]Owner, 0, max)
	seen := map[node.ID]bool{}
	for _, o := range l {
		if len(out) == max {
			break
		}
		if seen[o.ID] || o.ID == node.None || o.Ticket >= n || o.ID == self {
			continue
		}
		seen[o.ID] = true
		out = append(out, o)
	}
	return out
}

// onReqCoord: a voter not in E_pq acknowledges and stops vouching for
// E_pq ("remove processes in E_pq from Cview"). A leaving or left process
// votes too: it vouches for nobody once left, and its member's next
// process keeps its bans (Member.Join). Without its vote an exclusion
// whose candidate still holds an L that names it could never reach a
// strict majority of a list of two (doc.go, "A hand-back beside a cut").
func (m *Machine) onReqCoord(now time.Time, from node.ID, msg Msg) {
	voter := m.st == stCoordinator || m.st == stLinking ||
		(m.st == stLeaving || m.st == stLeft) && m.cfg.FaultTolerant && m.cfg.bug != bugNoHandL
	if !voter || m.n == 0 || msg.Ticket >= m.n || msg.SuccTicket >= m.n ||
		m.between(msg.Ticket, msg.SuccTicket, m.ticket) {
		return
	}
	// Succs are the processes of E_pq the excluder knows (none from an
	// excluder that does not say: one); at most one per ticket of E_pq.
	span := (msg.Ticket - msg.SuccTicket + m.n) % m.n
	if span == 0 {
		span = m.n // the whole ring but the excluder
	}
	m.grantBan(now, msg.Ticket, msg.SuccTicket, min(len(msg.Succs), int(span)), m.openTickets(msg.Ticket, msg.SuccTicket, msg.Succs))
	places, via := m.answers(now)
	m.send(from, Msg{Type: MsgAckCoord, Attempt: msg.Attempt, Preds: places, Succs: via})
}

// selfVote: the excluder, if it is a voter, bans as every voter does.
func (m *Machine) selfVote(now time.Time) {
	ex := m.ex
	if !ex.voters[m.cfg.ID] || ex.acks[m.cfg.ID] {
		return
	}
	m.grantBan(now, m.ticket, ex.cand.Ticket, len(ex.gone), m.openTickets(m.ticket, ex.cand.Ticket, ex.goneOwners))
	ex.acks[m.cfg.ID] = true
	places, via := m.answers(now)
	if ex.noteAnswers(m.cfg.ID, Msg{Preds: places, Succs: via}) {
		m.selfVote(now)
	}
}

// askVoters sends REQCOORD to the voters that have not answered.
func (m *Machine) askVoters() {
	ex := m.ex
	req := Msg{Type: MsgReqCoord, Attempt: ex.id, Ticket: m.ticket, SuccTicket: ex.cand.Ticket, Succs: ex.goneOwners}
	for _, id := range slices.Sorted(maps.Keys(ex.voters)) {
		if !ex.acks[id] && id != m.cfg.ID {
			m.send(id, req)
		}
	}
}

// exTries: each request of Algorithm 5 is sent up to this many times, δ
// apart, before its receivers count as weakly faulty (the seed's links
// retransmit within δ).
const exTries = 3

// candidateWait is how long the candidate q has to answer EXCLUDE (sent
// again every δ) before the excluder asks the next successor, which
// takes q into E_pq with the failed process. exTries·δ, the seed's weak
// failure detection, took a candidate that was only stalled for a second
// failure: one SIGKILL, and the survivor after the dead process
// unscheduled for 150 to 250 ms just as its predecessor's exclusion
// began (a busy host), and both were excluded; with k = 1 the processes
// between lost their support and the core ended (TestSimFirstStallKeepsCore
// failed 4 of 1,000 seeds so, seed 48 among them). While a failure near
// it is being repaired a process waits Stretch times Suspect rounds
// before it suspects its successor (suspectAfter; doc.go, "Busy hosts:
// the first stall"), and an exclusion under way is such a repair, so the
// candidate gets as long. Only a second failure beside the first pays
// for it, which a core of 2k+2 does not survive anyway. The planted
// bugQuickCandidate keeps exTries·δ.
func (m *Machine) candidateWait() time.Duration {
	w := exTries * m.cfg.Delta
	if m.cfg.bug == bugQuickCandidate {
		return w
	}
	return max(w, time.Duration(m.cfg.Suspect*m.stretch())*m.cfg.Round)
}

// bugQuickCandidate: a candidate silent for exTries·δ is taken into E_pq.
// Tests only.
const bugQuickCandidate bug = 160

// grantBan promises not to vouch for the tickets strictly between from
// and to, held by chain processes, for as long as the excluder waits
// (tempChain).
func (m *Machine) grantBan(now time.Time, from, to uint32, chain, open int) {
	if m.cfg.bug == bugNoBan {
		return
	}
	// The ban counts the first vouch at Grant windows, not at what this
	// voter reports granting: it must outlast the wait of an excluder
	// that counted another voter's longer report (rounds.go, waitFor).
	d := m.tempChain((from-to+m.n)%m.n, chain, open)
	if m.cfg.bug == bugBanOwnGrants {
		d = m.waitFor((from-to+m.n)%m.n, chain, open, m.grantedMax(now))
	}
	m.bans = append(m.bans, ban{from: from, to: to, until: now.Add(d)})
	for id, k := range m.known {
		if m.between(from, to, k.ticket) {
			delete(m.known, id)
		}
	}
	m.recompute(now)
}

// bugBanOwnGrants: a voter's ban counts the first vouch at the factor it
// reports granting itself, as if it were the whole quorum, so it ends
// before the wait of an excluder that counted a longer report. Tests
// only.
const bugBanOwnGrants bug = 144

func (m *Machine) onAckCoord(now time.Time, from node.ID, msg Msg) {
	if ex := m.ex; ex != nil && ex.asked && msg.Attempt == ex.id && ex.voters[from] {
		ex.acks[from] = true
		ex.granted = max(ex.granted, int(msg.Stretch))
		if ex.noteAnswers(from, msg) {
			m.selfVote(now)
			m.askVoters() // the processes its places went to vouch for them too
		}
		m.maybeTemp(now)
	}
}

// maybeTemp: with a quorum of ACKCOORDs, become a temporary coordinator.
func (m *Machine) maybeTemp(now time.Time) {
	ex := m.ex
	if !ex.quorumBanned(m.cfg.bug) {
		return
	}
	dist, open := (m.ticket-ex.cand.Ticket+m.n)%m.n, m.openTickets(m.ticket, ex.cand.Ticket, ex.goneOwners)
	wait := m.waitFor(dist, len(ex.gone), open, max(ex.granted, m.grantedMax(now)))
	if m.cfg.bug == bugShortTemp {
		wait = m.cfg.Round
	}
	m.temp = &temporary{until: now.Add(wait), q: ex.cand, gone: ex.gone, ex: ex}
	if m.cfg.Phases {
		m.events = append(m.events, TemporaryEvent{Event: "temporary", From: m.ticket, To: ex.cand.Ticket, Wait: wait, Margin: m.cfg.Margin,
			Tickets: int(dist) - 1, Chain: m.chainOf(dist, len(ex.gone), open)})
	}
	m.ex = nil
}

// exclusionTimers runs Algorithm 5's timeouts and ends a temporary
// coordinatorship.
func (m *Machine) exclusionTimers(now time.Time) {
	if ex := m.ex; ex != nil && now.Before(ex.deadline) && !now.Before(ex.resend) {
		ex.tries++
		ex.resend = now.Add(m.cfg.Delta)
		if ex.asked {
			m.askVoters()
		} else {
			m.send(ex.cand.ID, Msg{Type: MsgExclude, Attempt: ex.id})
		}
	}
	if ex := m.ex; ex != nil && !now.Before(ex.deadline) {
		if ex.asked {
			m.ex = nil // too few ACKCOORDs: retry next round
		} else {
			m.nextCandidate(now)
		}
	}
	if t := m.temp; t != nil && !now.Before(t.until) {
		m.reclaim(now)
	}
	live := m.bans[:0]
	var ended []ban
	for _, b := range m.bans {
		if now.Before(b.until) {
			live = append(live, b)
		} else {
			ended = append(ended, b)
		}
	}
	m.bans = live
	for _, b := range ended {
		m.keepPast(now, b)
	}
}

// reclaim: the temporary coordinatorship is over; every process in E_pq
// has stopped, so E_pq joins this process's range and q is its successor.
func (m *Machine) reclaim(now time.Time) {
	t := m.temp
	m.temp = nil
	from, to := m.ticket, t.q.Ticket
	m.floor += epochJump
	var gone []uint32
	for u := (from - 1 + m.n) % m.n; u != to; u = (u - 1 + m.n) % m.n {
		gone = append(gone, u)
		m.epochs[u] = max(m.epochs[u], m.floor)
		delete(m.view, u)
	}
	if len(gone) > 0 {
		m.events = append(m.events, ReclaimedEvent{Event: "reclaimed", From: gone[0], To: gone[len(gone)-1], Excluded: t.gone})
	}
	m.succ, m.succTicket = t.q.ID, t.q.Ticket
	for id, k := range m.known {
		if m.between(from, to, k.ticket) {
			delete(m.known, id)
		}
	}
	m.newSucc(now, t.q.ID, t.q.Ticket)
	if m.succ == m.cfg.ID {
		m.pred, m.preds, m.predsFull = m.cfg.ID, nil, false // everyone else is gone
		return
	}
	m.await = true
	m.send(m.succ, Msg{Type: MsgNewSucc, Ticket: m.ticket, SuccTicket: m.succTicket})
	m.succAt = now.Add(m.cfg.Retry)
	if m.leaveReq {
		m.leaveReq = false
		m.leave(now)
	}
}
