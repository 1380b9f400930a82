package ticket

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Counts are a machine's §4 message counts, for the checkers and the
// simulator's report.
type Counts struct {
	Rounds int
	// MaxAliveSent is the most ALIVEs sent in one round; MaxAliveFrom the
	// most distinct senders heard from in one round (both at most 2k+1).
	MaxAliveSent, MaxAliveFrom int
	AliveSent, AliveRecv       int
	// AliveFormer counts the ALIVEs sent beyond the 2k+1 closest, to
	// successors a join pushed out of the window (recompute).
	AliveFormer int
	heard       map[node.ID]bool // this round's senders
}

// Counts returns the §4 message counts.
func (m *Machine) Counts() Counts { c := m.counts; c.heard = nil; return c }

// ResetCounts starts the per-round maxima afresh (after a settling period).
func (m *Machine) ResetCounts() { m.counts.MaxAliveSent, m.counts.MaxAliveFrom = 0, 0 }

// inRing: the process holds a place in the ring and runs rounds (a leaving
// process too: its successors still count on its ALIVEs until it is gone).
func (m *Machine) inRing() bool {
	return m.st == stLinking || m.st == stCoordinator || m.st == stLeaving
}

// window is how long one ALIVE vouches for its receiver.
func (m *Machine) window() time.Duration { return time.Duration(m.cfg.Window) * m.cfg.Round }

// grace is how long a newcomer acts before it must have support: its
// predecessors learn of it one ring hop per round through ACKUPDATE, and
// half of 2k+1 of them must (k+1 hops), plus one round for the ALIVEs.
func (m *Machine) grace() time.Duration { return time.Duration(m.cfg.K+2) * m.cfg.Round }

// tempFor is how long a temporary coordinator waits before it hands out
// the dist−1 excluded tickets, and how long a voter keeps its ban, when
// E_pq holds one process: every process in E_pq has lost its support by
// then (doc.go, "Safety"). The seed's TempRounds = dist(p,q) term is here
// too: each process of E_pq may pass one new-predecessor grace on to the
// next.
func (m *Machine) tempFor(dist uint32) time.Duration { return m.tempChain(dist, 1, int(dist)-1) }

// tempChain is tempFor for an E_pq of chain processes. Its i-th process
// (from the excluder) may be kept supported by the last ALIVE of an
// earlier one, read up to δ after its sending and counted for up to
// Stretch windows, so it stops at most i·(δ + Stretch windows) after the
// quorum (§4, Corollary 4.1: the i-th successor in E_pq fails i rounds
// after p was acknowledged, a round here being the longest vouch; doc.go,
// "Safety: a chain inside E_pq"). The dist·δ term covers the first δ.
// A process that joined inside E_pq after the excluder last heard from
// its successor is unknown to it, so chain counts at least one process
// per ticket of E_pq up to k+1: past the (k+1)-th, a process of E_pq
// needs a vouch from a banned voter or an earlier process of E_pq
// besides the k that never promised (Corollary 4.1; doc.go, "Safety: a
// newcomer inside E_pq").
//
// open is how many tickets of E_pq may hold such a process (openTickets):
// all dist−1 of them but the excluder's own free tickets.
func (m *Machine) tempChain(dist uint32, chain, open int) time.Duration {
	chain = m.chainOf(dist, chain, open)
	links := time.Duration(chain-1) * (m.vouchMax() + m.cfg.Delta)
	d := float64(m.vouchMax()+links+m.grace()+time.Duration(dist)*(m.cfg.Round+m.cfg.Delta)) * (1 + 2*m.cfg.Drift)
	return time.Duration(d) + m.cfg.Round + m.cfg.Margin
}

// chainOf is how many processes of E_pq tempChain counts: the chain the
// excluder knows, and at least one per open ticket up to k+1.
func (m *Machine) chainOf(dist uint32, chain, open int) int {
	chain = max(chain, 1)
	if m.cfg.bug == bugOpenOwnRange {
		open = int(dist) - 1
	}
	if m.cfg.bug == bugChainUncapped {
		// every ticket but the excluder's, uncapped
		return max(chain, int(m.n)-1)
	}
	if m.cfg.bug != bugKnownChain {
		chain = max(chain, min(open, m.cfg.K+1))
	}
	if m.cfg.bug == bugOneVouchChain {
		chain = 1
	}
	return chain
}

// bugChainUncapped: the chain counts a process for every ticket of the
// ring but the excluder's, as if each could hold a newcomer and past k+1
// each could lengthen it (the k+1 cap gone), so a member cut off is
// excluded later than DetectionBoundFor promises. Tests only.
const bugChainUncapped bug = 161

// bugOneVouchChain: the wait and the bans count one stretched vouch
// whatever the number of processes in E_pq, so a process of E_pq kept
// supported by another one's last ALIVE outlasts them. Tests only.
const bugOneVouchChain bug = 133

// bugKnownChain: the chain counts only the processes of E_pq the
// excluder knows, so a newcomer it never heard of outlasts the wait.
// Tests only.
const bugKnownChain bug = 143

// ExclusionTime is how long the exclusion of one crashed successor takes
// at its quickest, from the crash until its ticket is in the excluder's
// range: Suspect rounds without an ACKUPDATE, then the temporary
// coordinator's wait for the one ticket excluded, tempFor(2) (dist(p,q)
// = 2: the successor's own ticket lies between the excluder and the new
// successor; DetectionBound's case without its stretch and requests).
// The seed's availability analysis (§4.2) counts time in units of it
// (its assumption ii).
func (m *Machine) ExclusionTime() time.Duration {
	return time.Duration(m.cfg.Suspect)*m.cfg.Round + m.tempFor(2)
}

// maxStretch bounds Config.Stretch: a busy host's support lasts at most
// this many windows.
const maxStretch = 8

// healthDecay: after this many rounds on time in a row, the local-health
// factor comes down by one (memberlist's awareness score works the same
// way: up at once on a sign of trouble, down slowly).
const healthDecay = 8

// health is a process's local health (Lifeguard's "local health
// awareness", Dadgar, Phillips and Currey, "Lifeguard: Local Health
// Awareness for More Accurate Failure Detection", 2018, §III-A): a
// process whose own rounds start late is starved itself, and what it
// reads as silence from others is its own lateness. It stretches its own
// timeouts instead of giving up on others: factor is 1 on time, up to
// Config.Stretch.
type health struct {
	level  uint8     // factor − 1
	late   time.Time // the overdue round already counted
	onTime int       // rounds on time in a row since the last change
	// granted is when a vouch (ALIVE, UPDATE) last went out carrying
	// each factor: a voter's ACKCOORD reports the highest still in reach
	// (grantedMax).
	granted [maxStretch + 1]time.Time
	born    time.Time // this process's first message (grantedMax)
}

func (h health) factor() uint8 { return h.level + 1 }

// noteLate raises the local-health factor by one when the round this
// process asked for (its Ready's Wake) is overdue by half a round or
// more when it next runs, once per overdue round: the driver handed it
// control that late. Called in Tick once support is checked: the stretch
// serves the next stall, and never brings back support that had run out
// (a process must not act again once its support lapsed, doc.go).
func (m *Machine) noteLate(now time.Time) {
	if !m.cfg.FaultTolerant || !m.inRing() || m.roundAt.IsZero() || m.health.late.Equal(m.roundAt) ||
		now.Sub(m.roundAt) < m.lateBy() {
		return
	}
	m.health.late, m.health.onTime = m.roundAt, 0
	if m.grant() > m.stretch() {
		// A host that stalled once stalls again: vouch for the longest
		// at once (doc.go, "Busy hosts: a stall of the whole host").
		m.health.level = uint8(m.grant() - 1)
		return
	}
	if int(m.health.factor()) < m.stretch() {
		m.health.level++
	}
}

// lateBy is how late a round must start to count as late: half a round
// (the driver's wake-up and a frame's queueing take microseconds on a
// healthy host).
func (m *Machine) lateBy() time.Duration { return m.cfg.Round / 2 }

// healthRound counts a round that started on time (called by round before
// it sets the next one) and lowers the factor after healthDecay of them.
func (m *Machine) healthRound(now time.Time) {
	if m.roundAt.IsZero() || now.Sub(m.roundAt) >= m.lateBy() {
		return
	}
	if m.health.onTime++; m.health.onTime >= healthDecay && m.health.level > 0 {
		m.health.level--
		m.health.onTime = 0
	}
}

// Health is the local-health factor: 1 when this process's rounds run on
// time, up to Config.Stretch when they run late (doc.go, "Busy hosts").
func (m *Machine) Health() int { return int(m.health.factor()) }

// vouchMax is the longest one ALIVE can vouch for its receiver: Stretch
// windows. The safety side (tempFor: a voter's ban, the temporary
// coordinator's wait) counts with it, whatever factor is in use, so a
// stretch decided alone by a starved process is safe (doc.go, "Busy
// hosts").
func (m *Machine) vouchMax() time.Duration {
	if m.cfg.bug == bugNoStretchWait {
		return m.window()
	}
	return time.Duration(m.grant()) * m.window()
}

// stretch is Config.Stretch, at least 1.
func (m *Machine) stretch() int { return max(m.cfg.Stretch, 1) }

// grant is Config.Grant, at least Stretch: the highest factor this
// process's vouches may carry, and so the longest vouch that can exist.
func (m *Machine) grant() int { return max(m.cfg.Grant, m.stretch()) }

// grantedMax is the highest factor, at least Stretch, on a vouch this
// process sent recently enough that its receiver may still count it:
// within the longest vouch, δ and the drift, and a round to spare. A
// voter reports it in its ACKCOORD (echo.go's stamp).
func (m *Machine) grantedMax(now time.Time) int {
	reach := time.Duration(float64(m.vouchMax()+m.cfg.Delta)*(1+2*m.cfg.Drift)) + m.cfg.Round
	if m.health.born.IsZero() || now.Sub(m.health.born) < reach {
		// An earlier process under this ID (crashed and started again,
		// or the member's last one) may have granted the longest, and
		// its vouches still count: assume it did.
		return m.grant()
	}
	for f := m.grant(); f > m.stretch(); f-- {
		if at := m.health.granted[f]; !at.IsZero() && now.Sub(at) < reach {
			return f
		}
	}
	return m.stretch()
}

// waitFor is the temporary coordinator's wait once its quorum has
// answered: tempChain, with the first vouch (a banned voter's last, §4,
// Corollary 4.1) counted at the highest factor a voter of the quorum
// reported granting instead of the longest that can exist. The links
// inside E_pq keep the longest: their senders report nothing.
func (m *Machine) waitFor(dist uint32, chain, open, granted int) time.Duration {
	if m.cfg.bug == bugWaitIgnoresGrants {
		granted = m.stretch()
	}
	granted = min(max(granted, m.stretch()), m.grant())
	spare := time.Duration(float64(time.Duration(m.grant()-granted)*m.window()) * (1 + 2*m.cfg.Drift))
	return m.tempChain(dist, chain, open) - spare
}

// openTickets is how many of E_pq's tickets (strictly between from, the
// excluder's, and to, the candidate's) may hold a process the excluder
// does not know: those from its closest known process of E_pq (known,
// closest first: its successor) on. The tickets before that one are the
// excluder's own free tickets, and only it hands them out (a CJOIN is
// granted by the coordinator of the range that holds the ticket,
// Algorithm 2; a joiner there becomes its successor), so none holds a
// process it does not know. Counting them too made an excluder that had
// just taken back a neighbour's ticket (a hand-back) wait a stretched
// vouch longer than DetectionBound (chain k+1 where one process can be
// unknown): one member cut off right after a hand-back was excluded 8 s
// after the cut with 250 ms rounds, where the bound was 7.08 s
// (TestSimCutAsTicketd checks the reclaim's time; the planted
// bugOpenOwnRange counts them again). Without a known process (an
// excluder that does not say), every ticket of E_pq counts.
func (m *Machine) openTickets(from, to uint32, known []Owner) int {
	if from == to {
		return int(m.n) - 1 // the whole ring but the excluder's ticket
	}
	all := int((from-to+m.n)%m.n) - 1
	if len(known) == 0 || !m.between(from, to, known[0].Ticket) {
		return all
	}
	return int((known[0].Ticket - to + m.n) % m.n)
}

// bugOpenOwnRange: the excluder's own free tickets between it and its
// successor count as tickets of E_pq that may hold a process it does not
// know, as before openTickets. Tests only.
const bugOpenOwnRange bug = 156

// bugWaitIgnoresGrants: the excluder waits out Stretch windows whatever
// its voters report: a process of E_pq kept by a busy voter's long vouch
// outlasts the wait. Tests only.
const bugWaitIgnoresGrants bug = 134

// vouchFor is how long the last ALIVE (or UPDATE) from id vouches for
// this process: Stretch windows, or the sender's factor if it granted
// more (Config.Grant), whatever this process's own factor. The excluder's
// wait and every voter's ban count Stretch windows for every vouch
// (vouchMax, waitFor), so a vouch of Stretch windows costs no reclaim
// any time; counting only the factor, a process whose first stall on a
// busy host comes while its factor is still 1 lost its support after
// one window (doc.go, "Busy hosts: the first stall"). A new
// predecessor's credit (onUpdate) is never stretched.
func (m *Machine) vouchFor(o Owner) time.Duration {
	v, ok := m.aliveBy[o]
	if m.cfg.bug == bugVouchByID {
		_, v, ok = m.vouchByID(o.ID)
	}
	if !ok || v == 0 {
		return m.window()
	}
	own := m.stretch()
	if m.cfg.bug == bugVouchAtFactor {
		own = min(int(m.health.factor()), m.stretch())
	}
	f := min(max(int(v), own), m.grant())
	return time.Duration(f) * m.window()
}

// bugVouchAtFactor: a vouch counts the larger of the sender's and the
// receiver's local-health factor only, as before the first stall was
// covered: on a busy host a survivor whose rounds were on time until
// now loses its support in the first stall longer than a window, and
// after a kill that ends the core. Tests only.
const bugVouchAtFactor bug = 147

// heard records an ALIVE or UPDATE from the process at place o, read
// at now, with its sender's local-health factor and its echo of our
// stamp. It is dated at the later of two times, each at most its
// sending plus δ on this process's clock (doc.go, "Busy hosts: echoed
// vouches"): its reading, or after a stall the last instant this
// process ran on time (held.go), and the stamp it echoes (echo.go),
// which is before its sending.
func (m *Machine) heard(now time.Time, o Owner, stretch uint8, echo uint64) {
	at := m.vouchAt(now)
	if e := m.echoAt(now, echo); e.After(at) {
		at = e
	}
	m.alive[o] = at
	if m.aliveBy == nil {
		m.aliveBy = map[Owner]uint8{}
	}
	m.aliveBy[o] = max(stretch, 1)
}

// vouch is when the process at place o of L last vouched for this one
// (its ALIVE or UPDATE as heard dated it, or a credit). Vouches are kept
// by place, (ID, ticket): one from the same ID at another ticket, a
// later incarnation that lost o's place and joined again elsewhere,
// vouches for nothing o was in L for (doc.go, "Places are (ID,
// ticket)"; §4, Corollary 4.1 needs every process of E_pq silent once
// it stops acting, and the new incarnation is not that process).
func (m *Machine) vouch(o Owner) (time.Time, bool) {
	if m.cfg.bug == bugVouchByID {
		at, _, ok := m.vouchByID(o.ID)
		return at, ok
	}
	at, ok := m.alive[o]
	return at, ok
}

// vouchByID is the planted bugVouchByID's reading of the vouches: the
// latest from id at any place, and its sender's factor.
func (m *Machine) vouchByID(id node.ID) (time.Time, uint8, bool) {
	var at time.Time
	var by uint8
	ok := false
	for o, t := range m.alive {
		if o.ID == id && (!ok || t.After(at)) {
			at, by, ok = t, m.aliveBy[o], true
		}
	}
	return at, by, ok
}

// pruneVouches forgets the vouches of places no longer in L once they
// are older than any vouch can count (four times the longest, Grant
// windows): support and suspicion read only L's places, and takeR treats
// a place's vouch older than a round like none, so such an entry changes
// nothing but the memory a long-lived process holds, one entry per
// (ID, ticket) place it ever heard from.
func (m *Machine) pruneVouches(now time.Time) {
	if m.cfg.bug == bugKeepVouches {
		return
	}
	stale := now.Add(-4 * time.Duration(m.grant()) * m.window())
	for o, at := range m.alive {
		if at.Before(stale) && !slices.Contains(m.preds, o) {
			delete(m.alive, o)
			delete(m.aliveBy, o)
		}
	}
}

// bugKeepVouches: vouches of places that left L are never forgotten.
// Tests only.
const bugKeepVouches bug = 149

// bugVouchByID: support counts a vouch by its sender's ID alone, at
// whatever place the sender holds it from, so a process that lost its
// place and joined again elsewhere under the same ID keeps vouching for
// its old place's successors. Tests only.
const bugVouchByID bug = 146

// suspectAfter is how long the successor may leave an UPDATE unanswered
// before it is suspected: Suspect rounds, times the larger of this
// process's factor and the successor's last word of its own (Lifeguard's
// peers give a process that says it is slow more time).
//
// While a failure near it is being repaired, it waits Stretch times
// Suspect rounds whatever its factor: while it keeps a ban (it voted for
// an exclusion that is not over), or while a predecessor in its L other
// than its successor has not vouched for it within a window (one that
// failed, and whose exclusion has not started here yet). The L of every
// process near a failure counts the failed process until the repair
// ends, so a second exclusion there costs the processes between the two
// their support (two failures in one L; with k = 1 the core ends), and
// a successor that is only stalled, on a host whose rounds ran on time
// until then, must not be taken for one (doc.go, "Busy hosts: the first
// stall"). The successor itself is left out of the test, so the first
// failure is suspected as soon as before.
func (m *Machine) suspectAfter() time.Duration {
	f := max(m.health.factor(), m.succHealth, 1)
	if m.cfg.bug != bugSuspectWhileRepairing && m.repairing() {
		f = uint8(m.stretch())
	}
	return time.Duration(m.cfg.Suspect) * m.cfg.Round * time.Duration(min(int(f), m.stretch()))
}

// repairing reports whether a failure near this process is being
// repaired, as suspectAfter uses it: a ban of its own that has not
// ended, or a predecessor other than the successor silent for a window.
func (m *Machine) repairing() bool {
	now := m.now
	for _, b := range m.bans {
		if now.Before(b.until) {
			return true
		}
	}
	for _, o := range m.preds {
		if o.ID == m.succ || o.ID == m.cfg.ID {
			continue
		}
		if at, ok := m.vouch(o); ok && now.Sub(at) >= m.window() {
			return true
		}
	}
	return false
}

// bugSuspectWhileRepairing: a voter suspects its successor after Suspect
// rounds times the factor while the exclusion it voted for is still
// under way, so a survivor stalled for a few rounds after a kill is
// excluded too and the core ends. Tests only.
const bugSuspectWhileRepairing bug = 148

// needed is how many of a list of l predecessors must vouch for a member:
// half, rounded up. An exclusion needs the other side, a strict majority
// (exclusionQuorum), so the two always meet.
func needed(l int) int { return (l + 1) / 2 }

// exclusionQuorum is how many voters an exclusion needs against a list of
// l predecessors: more than l − needed(l).
func exclusionQuorum(l int) int { return l/2 + 1 }

// SupportedUntil is when this process must stop acting unless more ALIVEs
// arrive (zero time: it is alone and needs none; its own clock).
func (m *Machine) SupportedUntil() time.Time {
	if !m.cfg.FaultTolerant || m.succ == m.cfg.ID && len(m.preds) == 0 {
		return time.Time{} // alone: nobody can exclude it
	}
	var buf [8]time.Time // no allocation for k ≤ 3: it runs before every message
	ts := buf[:0]
	for _, o := range m.preds {
		if at, ok := m.vouch(o); ok {
			ts = append(ts, at.Add(m.vouchFor(o)))
		}
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return b.Compare(a) })
	var until time.Time
	if need := max(1, needed(len(m.preds))); len(ts) >= need {
		until = ts[need-1]
	}
	if m.graceUntil.After(until) {
		until = m.graceUntil
	}
	if until.IsZero() {
		until = time.Unix(0, 1) // never supported: stop at once
	}
	return until
}

// supported reports whether this process may go on acting at now.
func (m *Machine) supported(now time.Time) bool {
	u := m.SupportedUntil()
	return u.IsZero() || now.Before(u)
}

// vouched reports whether the support comes from ALIVEs, not the grace
// period: only then may the process serve CJOINs (a newcomer in grace
// must not create newcomers of its own, doc.go).
func (m *Machine) vouched(now time.Time) bool {
	if !m.cfg.FaultTolerant || m.succ == m.cfg.ID && len(m.preds) == 0 {
		return true
	}
	n := 0
	for _, o := range m.preds {
		if at, ok := m.vouch(o); ok && now.Sub(at) < m.window() {
			n++
		}
	}
	return n >= max(1, needed(len(m.preds)))
}

// MayAct reports whether this process may act on its ticket at now (its
// own clock): it owns one and has support.
func (m *Machine) MayAct(now time.Time) bool {
	return (m.st == stLinking || m.st == stCoordinator) && m.supported(now)
}

// Settled reports whether leaving now would disturb nothing in repair,
// and whether this process would survive the crash of one neighbour:
// its L is full (2k+1 predecessors, or the whole ring), every
// predecessor in it vouched for this process within the last round and a
// half, and no exclusion, temporary coordinatorship, ban or hand-over is
// under way here. A voluntary leave shifts its neighbours' L and R; while
// one of them has failed, that can cost a live process its support
// (doc.go, "Liveness"), so ticketd gives tickets back only when settled.
func (m *Machine) Settled(now time.Time) bool {
	if m.st != stCoordinator || m.ex != nil || m.temp != nil || m.await || len(m.bans) > 0 {
		return false
	}
	if m.cfg.FaultTolerant && m.succ != m.cfg.ID && !m.predsFull {
		return false // a newcomer whose predecessor has not passed it L yet
	}
	for _, o := range m.preds {
		if at, ok := m.vouch(o); !ok || now.Sub(at) >= m.cfg.Round*3/2 {
			return false
		}
	}
	return true
}

// round is Algorithm 3's main loop, once per Round.
func (m *Machine) round(now time.Time) {
	m.healthRound(now)
	m.roundAt = now.Add(m.cfg.Round)
	if !m.inRing() {
		return
	}
	m.counts.Rounds++
	m.recompute(now)
	m.pruneEcho()
	m.introduce(now)
	m.counts.MaxAliveFrom = max(m.counts.MaxAliveFrom, len(m.counts.heard))
	clear(m.counts.heard)
	// ALIVE to the 2k+1 closest successors (Algorithm 3), except those a
	// granted exclusion covers (Algorithm 5, REQCOORD); with the places
	// this process took and speaks for (speak.go).
	speaks := m.speaking(now)
	sent := 0
	for _, o := range m.succs {
		if sent == 2*m.cfg.K+1 {
			break
		}
		if o.ID == m.cfg.ID || m.banned(now, o.Ticket) {
			continue
		}
		m.send(o.ID, Msg{Type: MsgAlive, Ticket: o.Ticket, Place: m.ticket, Preds: speaks})
		sent++
	}
	m.counts.AliveSent += sent
	m.counts.MaxAliveSent = max(m.counts.MaxAliveSent, sent)
	for _, id := range slices.Sorted(maps.Keys(m.former)) {
		f := m.former[id]
		if m.beyondBan(now, f.ticket) {
			// Its new R waits for an exclusion this process voted for,
			// which can outlast linger (its range may span many free
			// tickets): keep vouching until that is over.
			f.at = now.Add(m.linger())
			m.former[id] = f
		}
		if !now.Before(f.at) {
			delete(m.former, id)
			continue
		}
		if !m.banned(now, f.ticket) && !slices.ContainsFunc(m.succs, func(o Owner) bool { return o.ID == id }) {
			m.send(id, Msg{Type: MsgAlive, Ticket: f.ticket, Place: m.ticket, Preds: speaks})
			m.counts.AliveFormer++
		}
	}
	if m.succ == m.cfg.ID || m.st == stLeaving {
		return
	}
	// UPDATE(R) to the immediate successor, unless a temporary
	// coordinator (Algorithm 3: TempRounds_p > 0).
	if m.temp == nil && !m.banned(now, m.succTicket) {
		m.sendR(now, m.ownR())
	}
	// Weak failure detection: no delivery status for Suspect rounds. A
	// newcomer still linking excludes a successor that died before it
	// acknowledged the newcomer's NEWSUCC, or it would wait for ever; so
	// does a coordinator whose new successor (a leaver's, whose CLEAVE it
	// served) was cut off before it acknowledged ours.
	if m.temp == nil && m.ex == nil && (m.st == stCoordinator && (!m.await || m.cfg.bug != bugAwaitNoSuspect) || m.st == stLinking) &&
		now.Sub(m.lastAck) >= m.suspectAfter() {
		m.startExclusion(now)
	}
}

// bugAwaitNoSuspect: a coordinator waiting for its new successor's
// ACKSUCC never suspects it, as before: a successor cut off right after
// a hand-back was never excluded and the pool stopped growing. Tests
// only.
const bugAwaitNoSuspect bug = 164

// sendUpdate sends (or, half a round later unanswered, resends) the
// round's UPDATE: the seed's links are connection oriented and retransmit
// within δ; one lost datagram must not make a live successor faulty.
func (m *Machine) sendUpdate(now time.Time) {
	m.updAt, m.updAcked = now.Add(m.cfg.Round/2), false
	m.send(m.succ, Msg{Type: MsgUpdate, Attempt: m.updSeq, Ticket: m.ticket, SuccTicket: m.succTicket, Preds: m.pendR})
}

// setPreds makes L of a predecessor's R, cut where it comes back round
// to this place.
func (m *Machine) setPreds(r []Owner) {
	round := aroundOnce(r, Owner{Ticket: m.ticket, ID: m.cfg.ID})
	m.preds = m.dropTaken(m.trim(round, 2*m.cfg.K+1, false))
	m.predsFull = len(m.preds) == 2*m.cfg.K+1 || len(round) < len(r)
}

// ownR is R: this process and its 2k closest predecessors.
func (m *Machine) ownR() []Owner {
	r := []Owner{{Ticket: m.ticket, ID: m.cfg.ID}}
	return m.trim(append(r, m.preds...), 2*m.cfg.K+1, true)
}

// aroundOnce cuts a list of predecessors where it reaches this place: in
// a ring of fewer than 2k+2 processes the list wraps, and what follows is
// more than once round (and would keep processes that left in L for
// ever). An earlier incarnation of this ID at another ticket is not this
// place (trim drops it).
func aroundOnce(l []Owner, self Owner) []Owner {
	for i, o := range l {
		if o == self {
			return l[:i]
		}
	}
	return l
}

// trim drops duplicates (and this process, unless keepSelf) and keeps the
// first max entries.
func (m *Machine) trim(l []Owner, max int, keepSelf bool) []Owner {
	self := m.cfg.ID
	if keepSelf {
		self = node.None
	}
	return lFor(l, self, max, m.n)
}

// onAlive records an ALIVE. One meant for a ticket this process does not
// own (it left, was excluded, or came back as a new process) is answered
// "gone", so that the sender stops counting us among its successors.
func (m *Machine) onAlive(now time.Time, from node.ID, msg Msg) {
	if !m.inRing() || msg.Ticket != m.ticket {
		m.send(from, Msg{Type: MsgIntro, Ticket: NoTicket})
		return
	}
	if m.uncounted(Owner{Ticket: msg.Place, ID: from}) {
		m.send(from, Msg{Type: MsgIntro, Ticket: NoTicket, Attempt: introUncounted})
	}
	if msg.Place != NoTicket {
		m.heard(now, Owner{Ticket: msg.Place, ID: from}, msg.Stretch, msg.Echo)
		m.heardFor(now, from, msg)
	}
	m.counts.AliveRecv++
	if m.counts.heard == nil {
		m.counts.heard = map[node.ID]bool{}
	}
	m.counts.heard[from] = true
}

// onUpdate: Algorithm 4, "Handling of UPDATE messages": only from the
// immediate predecessor; answered with the delivery status.
func (m *Machine) onUpdate(now time.Time, from node.ID, msg Msg) {
	// An R always holds its sender: an empty one is malformed, and would
	// leave us an empty L.
	if !m.inRing() || m.st == stLeaving || msg.SuccTicket != m.ticket || len(msg.Preds) == 0 {
		return
	}
	if !m.claim(now, from, msg.Ticket) {
		m.refused = refusedUpdate{from: from, at: now} // dropClaim asks for it again
		return
	}
	if m.staleUpdate(now, from, msg) {
		return
	}
	m.takeR(now, msg.Preds)
	// The immediate predecessor vouches for us by sending it (it sends
	// none to a successor it no longer vouches for, round): a new
	// predecessor's first ALIVE may come after its first UPDATE.
	m.heard(now, Owner{Ticket: msg.Ticket, ID: from}, msg.Stretch, msg.Echo)
	m.send(from, m.succsMsg(msg.Attempt))
	m.updateNow(now, false)
}

// updSeen is the last UPDATE a process took: from whom (place) and its
// number.
type updSeen struct {
	from Owner
	seq  uint64
	at   time.Time
}

// staleUpdate reports whether an UPDATE is older than one already taken
// from the same place lately (a datagram overtaken, or a duplicate
// delayed): taking its R would give us an L that the sender no longer
// counts among those we may hold (sentRs holds what it sent since our
// last answer to its latest), and an exclusion of us would not take a
// majority of it. UPDATEs a round apart were seldom overtaken; passed on
// at once (updateNow) they are often a millisecond apart. The memory
// lasts a round and a half, so that a new incarnation at the same place,
// numbering afresh, is heard from soon.
func (m *Machine) staleUpdate(now time.Time, from node.ID, msg Msg) bool {
	place := Owner{Ticket: msg.Ticket, ID: from}
	if m.cfg.bug != bugTakeStaleUpdate && m.updIn.from == place && msg.Attempt < m.updIn.seq && now.Sub(m.updIn.at) < m.cfg.Round*3/2 {
		return true
	}
	m.updIn = updSeen{from: place, seq: msg.Attempt, at: now}
	return false
}

// bugTakeStaleUpdate: an UPDATE overtaken by a newer one is taken all the
// same. Tests only.
const bugTakeStaleUpdate bug = 153

// updateNow passes a changed R on at once instead of at the next round
// (the seed's Algorithm 3 sends UPDATE once a round; when else it may is
// left open). A hand-back or a join changes the Ls of the next 2k+1 processes,
// one hop a round: with 2k+2 processes or fewer the L of the process
// after the leaver's predecessor comes round the whole ring, and until it
// has, it names the leaver, which vouches for nobody any more. Should a
// member fall silent meanwhile (cut off, stopped), that L is never
// brought up to date before the member's exclusion, and one voucher of
// the two it needs (k = 1) is left: the process stops acting, and those
// after it follow (doc.go, "A hand-back beside a cut"). Passing the R on
// as it changes closes that window from rounds to message delays. Every
// R sent goes into sentRs as the round's does, so an exclusion still
// takes a majority of every L the successor may hold. force: the
// successor is new (a CLEAVE served), its L still the leaver's R.
func (m *Machine) updateNow(now time.Time, force bool) {
	if m.cfg.bug == bugRoundUpdateOnly || !m.cfg.FaultTolerant || !m.inRing() || m.succ == m.cfg.ID ||
		m.st == stLeaving || m.temp != nil || m.banned(now, m.succTicket) {
		return
	}
	r := m.ownR()
	if !force && (len(m.sentRs) == 0 || slices.Equal(m.sentRs[len(m.sentRs)-1], r)) {
		return // nothing new, or nothing sent to this successor yet: the round's
	}
	m.sendR(now, r)
}

// sendR sends R in a new UPDATE, and counts it among the Ls the
// successor may hold (sentRs) until it acknowledges the latest.
func (m *Machine) sendR(now time.Time, r []Owner) {
	m.pendR = r
	if len(m.sentRs) == 0 || !slices.Equal(m.sentRs[len(m.sentRs)-1], r) {
		m.sentRs = append(m.sentRs, r)
	}
	m.updSeq++
	m.sendUpdate(now)
}

// bugRoundUpdateOnly: an R is passed on only at the next round. Tests only.
const bugRoundUpdateOnly bug = 150

// takeR makes a predecessor's R our L. A predecessor new to L has not
// had time to learn of us (it will, by our INTRO): it counts as vouching
// for two rounds (doc.go, "Safety").
func (m *Machine) takeR(now time.Time, r []Owner) {
	old := m.preds
	m.setPreds(r)
	m.pruneVouches(now)
	for _, o := range m.preds {
		if len(old) > 0 && !slices.ContainsFunc(old, func(p Owner) bool { return p == o || p.ID == o.ID && p.Ticket == NoTicket }) {
			credit := m.vouchAt(now).Add(2*m.cfg.Round - m.window())
			if at, ok := m.alive[o]; !ok || at.Before(credit) {
				m.alive[o] = credit
				delete(m.aliveBy, o) // a credit: never stretched
				m.send(o.ID, Msg{Type: MsgIntro, Ticket: m.ticket, SuccTicket: o.Ticket})
			}
		}
	}
}

// onHandL: our predecessor is leaving (or has left) and hands us its L,
// an R of its own predecessor p, which p (our predecessor once it serves
// the CLEAVE) keeps among the lists an exclusion of us needs (onCLeave).
// It is taken only while our L is still the leaver's R (its head is the
// leaver's place): once p's own UPDATE has reached us, a late copy would
// take us back to an older list that p no longer counts.
func (m *Machine) onHandL(now time.Time, from node.ID, msg Msg) {
	if msg.SuccTicket == m.ticket && m.inRing() {
		m.dropClaim(now, from, msg.Ticket)
	}
	if m.st != stCoordinator && m.st != stLinking || msg.SuccTicket != m.ticket || len(msg.Preds) == 0 ||
		len(m.preds) == 0 || m.preds[0].ID != from || m.preds[0].Ticket != msg.Ticket || m.succ == m.cfg.ID ||
		msg.Preds[0] == (Owner{Ticket: m.ticket, ID: m.cfg.ID}) {
		return // (the last: we serve the CLEAVE ourselves, a ring of two)
	}
	m.takeR(now, msg.Preds)
	m.updateNow(now, false)
}

// claim notes that from (owning ticket t) names us its successor, by
// NEWSUCC or UPDATE, and reports whether it is our predecessor: the
// closest such process heard from in the last round and a half. A late
// duplicate from a process that has since taken another successor, or a
// predecessor that has left or been excluded, falls silent and drops out;
// a newcomer inserted before us is closer and wins at once.
func (m *Machine) claim(now time.Time, from node.ID, t uint32) bool {
	if t >= m.n || from == m.cfg.ID || m.succ == m.cfg.ID {
		return false // alone, nobody precedes us: a late word from one who left
	}
	if h, ok := m.handed[from]; ok && h.ticket == t && now.Sub(h.at) < m.cfg.Round*3/2 && m.cfg.bug != bugLeaverReclaims {
		// It handed us its L (dropClaim): it is leaving and sends no
		// UPDATE or NEWSUCC after that, so this one was sent before and
		// overtaken. Taken, it would make the leaver our predecessor
		// again and its R our L, naming the leaver, until our next
		// predecessor's UPDATE after the claim runs out.
		return false
	}
	m.claims[from] = known{ticket: t, at: now}
	m.pickPred(now)
	return m.pred == from
}

// pickPred makes the closest claim of the last round and a half our
// predecessor (none: it stays).
func (m *Machine) pickPred(now time.Time) {
	best, bestD := m.pred, uint32(0)
	for id, c := range m.claims {
		if now.Sub(c.at) >= m.cfg.Round*3/2 {
			delete(m.claims, id)
			continue
		}
		d := (c.ticket - m.ticket + m.n) % m.n
		if d == 0 {
			continue
		}
		if bestD == 0 || d < bestD || d == bestD && id < best {
			best, bestD = id, d
		}
	}
	if bestD != 0 {
		m.pred = best
	}
}

// dropClaim: the predecessor at ticket t hands us its L (MsgHandL), so it
// is leaving or has left and claims us no more. Its claim would otherwise
// stand for a round and a half after its last UPDATE and, being closer
// than the process that serves its CLEAVE, make us refuse that process's
// UPDATEs until then: the new predecessor could not serve a CJOIN (it
// needs our acknowledgement, serving) and the ticket handed back lay free
// in its range for up to 375 ms with ticketd's 250 ms rounds, which
// costs a stretched vouch more should that process then be cut off
// (openTickets). The planted bugKeepLeaverClaim keeps the claim.
func (m *Machine) dropClaim(now time.Time, from node.ID, t uint32) {
	if m.handed == nil {
		m.handed = map[node.ID]known{}
	}
	maps.DeleteFunc(m.handed, func(_ node.ID, h known) bool { return now.Sub(h.at) >= m.cfg.Round*3/2 })
	m.handed[from] = known{ticket: t, at: now}
	if c, ok := m.claims[from]; !ok || c.ticket != t || m.cfg.bug == bugKeepLeaverClaim {
		return
	}
	delete(m.claims, from)
	m.pickPred(now)
	// The new predecessor's UPDATE can come just before the leaver's
	// MsgHandL (both follow the CLEAVE's service) and was refused then.
	// It is not taken now: it vouches as of its arrival, and taking it
	// later would date the vouch later. An ACKSUCC out of turn asks its
	// sender to send it again at once (resendUpdate) rather than half a
	// round later.
	if r := m.refused; r.from != node.None && r.from == m.pred && now.Sub(r.at) < m.cfg.Round {
		m.refused = refusedUpdate{}
		m.send(r.from, Msg{Type: MsgAckSucc})
	}
}

// refusedUpdate is the last UPDATE refused because another process's
// claim to be our predecessor stood (claim).
type refusedUpdate struct {
	from node.ID
	at   time.Time
}

// resendUpdate: an ACKSUCC from our successor when we are not waiting
// for one (dropClaim) says it may have refused our UPDATE; send the one
// in flight again now (the same number: a retransmission brought
// forward, answered as any other).
func (m *Machine) resendUpdate(now time.Time) {
	if !m.updAcked && m.temp == nil && m.succ != m.cfg.ID && m.st != stLeaving && !m.banned(now, m.succTicket) && m.pendR != nil {
		m.sendUpdate(now)
	}
}

// bugLeaverReclaims: a leaver's UPDATE that arrives after its MsgHandL
// makes it our predecessor again (claim). Tests only.
const bugLeaverReclaims bug = 165

// bugKeepLeaverClaim: a leaver's claim to be our predecessor stands after
// its MsgHandL. Tests only.
const bugKeepLeaverClaim bug = 159

// succsMsg answers the predecessor's UPDATE number seq with our
// successors (ourselves first).
func (m *Machine) succsMsg(seq uint64) Msg {
	succs := []Owner{{Ticket: m.ticket, ID: m.cfg.ID}}
	for _, o := range m.succs {
		// A temporary coordinator does not pass on the processes it is
		// excluding: a voter whose ban ends before the exclusion does
		// would take them for live successors again.
		if t := m.temp; t != nil && m.between(m.ticket, t.q.Ticket, o.Ticket) {
			continue
		}
		succs = append(succs, o)
	}
	return Msg{Type: MsgAckUpdate, Attempt: seq, Succs: m.trim(succs, 2*m.cfg.K+1, true), Floor: m.floor}
}

// onAckUpdate: the UPDATE was delivered (STATUS OK): R_p := R, and the
// successor's list of successors becomes ours.
func (m *Machine) onAckUpdate(now time.Time, from node.ID, msg Msg) {
	if from != m.succ || !m.inRing() {
		return
	}
	if msg.Attempt == m.updSeq {
		m.lastAck, m.updAcked, m.succAcked = now, true, true
		if m.pendR != nil {
			m.sentRs = append(m.sentRs[:0], m.pendR)
		}
	}
	m.floor = max(m.floor, msg.Floor)
	m.succHealth = msg.Stretch
	m.lastNews = now
	for _, o := range msg.Succs {
		m.learn(now, o)
	}
	// The successor's list is its closest successors in order: one we
	// know of that lies within it and is not on it has left, was excluded
	// without our vote, or crashed. It is no longer fresh, so it cannot
	// keep a listed process out of our 2k+1 (it fills up, until forgotten).
	far := uint32(0)
	for _, o := range msg.Succs {
		far = max(far, m.dist(o.Ticket))
	}
	for id, k := range m.known {
		if m.dist(k.ticket) < far && id != from &&
			!slices.ContainsFunc(msg.Succs, func(o Owner) bool { return o.ID == id }) {
			if old := now.Add(-m.window()); k.at.After(old) {
				k.at = old
				m.known[id] = k
			}
		}
	}
	m.recompute(now)
}

// forgetSucc: a successor not heard of for this many windows is dropped
// (those that left or were excluded say so when an ALIVE reaches them;
// this is the backstop).
const forgetSucc = 4

// known is a process this one has heard of as a successor, and when.
type known struct {
	ticket uint32
	at     time.Time
}

// learn notes a successor.
func (m *Machine) learn(now time.Time, o Owner) {
	if o.ID != m.cfg.ID && o.ID != node.None && o.Ticket < m.n && !m.banned(now, o.Ticket) {
		m.known[o.ID] = known{ticket: o.Ticket, at: now}
	}
}

// recompute chooses the 2k+1 closest successors: the immediate successor
// first, then the closest others heard of lately (from the successor's
// lists and from INTROs), none that an exclusion covers, one per ticket
// (the latest word wins).
func (m *Machine) recompute(now time.Time) {
	old := slices.Clone(m.succs)
	defer m.keepFormer(now, old)
	m.succs = m.succs[:0]
	if m.succ == m.cfg.ID || m.succ == node.None {
		return
	}
	m.succs = append(m.succs, Owner{Ticket: m.succTicket, ID: m.succ})
	dist := m.dist
	first := dist(m.succTicket)
	byTicket := map[uint32]Owner{}
	latest := map[uint32]time.Time{}
	// Age is measured against the last news from the successor: while
	// none comes (it has failed, and this process is excluding it, or is
	// a temporary coordinator that sends no UPDATE) the processes beyond
	// it are still there and still need our ALIVEs.
	// A new successor (a reclaim, a join served) is no news of those
	// beyond: lastNews moves only with an ACKUPDATE.
	news := now
	if m.lastNews.Before(now) {
		news = m.lastNews
	}
	for id, k := range m.known {
		// Past a range this process voted to exclude, nobody can tell us
		// of a successor until that exclusion ends and the new R has gone
		// round, and it may count on our ALIVEs all along: not forgotten.
		if news.Sub(k.at) >= forgetSucc*m.window() && id != m.succ && !m.beyondBan(now, k.ticket) {
			delete(m.known, id)
			continue
		}
		d := dist(k.ticket)
		if id == m.succ || d <= first || m.banned(now, k.ticket) {
			continue
		}
		if at, ok := latest[k.ticket]; !ok || k.at.After(at) || k.at.Equal(at) && id < byTicket[k.ticket].ID {
			byTicket[k.ticket], latest[k.ticket] = Owner{Ticket: k.ticket, ID: id}, k.at
		}
	}
	// Those heard of within the window first, closest first; older ones
	// only to fill up (a successor whose own successor fell silent still
	// vouches for what lies beyond it). The window counts from the last
	// news too: while the successor is silent, what it last said stays
	// as fresh as an INTRO heard since, and a newcomer further down must
	// not push a closer process that is still there out of the list (an
	// exclusion would then ask past it and take it out with the failed).
	rest := slices.Collect(maps.Values(byTicket))
	fresh := func(o Owner) bool {
		return news.Sub(latest[o.Ticket]) < m.window() || m.keptFresh(now, o.Ticket)
	}
	slices.SortFunc(rest, func(a, b Owner) int {
		if fa, fb := fresh(a), fresh(b); fa != fb {
			if fa {
				return -1
			}
			return 1
		}
		return int(dist(a.Ticket)) - int(dist(b.Ticket))
	})
	for _, o := range rest {
		if len(m.succs) == 2*m.cfg.K+1 {
			break
		}
		m.succs = append(m.succs, o)
	}
	slices.SortFunc(m.succs[1:], func(a, b Owner) int { return int(dist(a.Ticket)) - int(dist(b.Ticket)) })
}

// keepFormer: a successor that left the 2k+1 closest while still known
// (a join came in between, not a leave, exclusion or "gone") keeps getting
// our ALIVEs for linger. Its L names us until its own predecessor sends
// it a new R, and if a process between us has failed that waits for the
// failure's exclusion; without them it could lose its support, and its
// successors theirs after it (doc.go, "Liveness").
func (m *Machine) keepFormer(now time.Time, old []Owner) {
	for _, o := range m.succs {
		delete(m.former, o.ID)
	}
	for _, o := range old {
		k, ok := m.known[o.ID]
		if !ok && o.ID != m.succ || o.ID == m.cfg.ID || m.banned(now, o.Ticket) ||
			slices.ContainsFunc(m.succs, func(n Owner) bool { return n.ID == o.ID }) {
			continue
		}
		if ok && k.ticket != o.Ticket {
			continue
		}
		if _, had := m.former[o.ID]; !had {
			m.former[o.ID] = known{ticket: o.Ticket, at: now.Add(m.linger())}
		}
	}
}

// linger is how long a former successor keeps getting ALIVEs: long
// enough for a failure among the 2k+1 to be suspected and excluded and
// for the new R to travel 2k+1 hops.
func (m *Machine) linger() time.Duration {
	return time.Duration(m.cfg.Suspect+2*m.cfg.K+1)*m.cfg.Round + m.tempFor(uint32(2*m.cfg.K+1))
}

// onIntro: a successor that we do not vouch for yet introduces itself.
func (m *Machine) onIntro(now time.Time, from node.ID, msg Msg) {
	if m.st != stCoordinator && m.st != stLinking {
		return
	}
	if msg.Ticket == NoTicket && msg.Attempt == introUncounted {
		m.onUncounted(from)
		return
	}
	if msg.Ticket == NoTicket { // gone
		delete(m.former, from)
		if from != m.succ {
			delete(m.known, from)
			m.recompute(now)
		}
		return
	}
	if m.banned(now, msg.Ticket) {
		return
	}
	m.learn(now, Owner{Ticket: msg.Ticket, ID: from})
	m.recompute(now)
	m.introFormer(now, from, msg)
}

// introduce: every round, tell the predecessors in L that have not sent
// an ALIVE within the last round and a half that we are here.
func (m *Machine) introduce(now time.Time) {
	if m.st != stCoordinator && m.st != stLinking {
		return
	}
	for _, o := range m.preds {
		if at, ok := m.vouch(o); !ok || now.Sub(at) >= m.cfg.Round*3/2 {
			m.send(o.ID, Msg{Type: MsgIntro, Ticket: m.ticket, SuccTicket: o.Ticket})
		}
	}
}

// newSucc puts a new immediate successor at the head of the list.
func (m *Machine) newSucc(now time.Time, id node.ID, t uint32) {
	m.ex = nil // an exclusion was about the old successor
	m.lastAck, m.succAcked, m.succHealth = now, false, 0
	m.pendR, m.sentRs = nil, nil
	m.recompute(now)
}

// dropSucc forgets a successor that has left.
func (m *Machine) dropSucc(now time.Time, id node.ID) {
	delete(m.known, id)
	m.recompute(now)
}

// checkSupport: a member that has lost its support thinks itself
// excluded and leaves the core at once (§4, first invariant).
func (m *Machine) checkSupport(now time.Time) {
	if !m.inRing() || m.supported(now) {
		return
	}
	if m.st == stLinking || m.st == stCoordinator {
		m.events = append(m.events, ExcludedEvent{Event: "excluded", Ticket: m.ticket, Epoch: m.epoch, Why: m.supportWhy(now)})
	}
	m.st, m.ex, m.temp, m.await = stExcluded, nil, nil, false
	m.lastSucc, m.lastPred = m.succ, m.pred
}

// supportWhy says how this process's support ran out at now, for the
// log: its own lateness (a round overdue, the date held.go gives vouches
// read in a stall) and each predecessor's last vouch.
func (m *Machine) supportWhy(now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "factor %d, round overdue by %v", m.health.factor(), max(0, now.Sub(m.roundAt)).Round(time.Millisecond))
	if now.Before(m.held.till) {
		fmt.Fprintf(&b, ", stalled since %v ago", now.Sub(m.held.at).Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "; support ended %v ago, %d of %d vouches needed:", now.Sub(m.SupportedUntil()).Round(time.Millisecond), max(1, needed(len(m.preds))), len(m.preds))
	for _, o := range m.preds {
		if at, ok := m.vouch(o); ok {
			fmt.Fprintf(&b, " %v@%d %v ago for %v (f%d);", o.ID, o.Ticket, now.Sub(at).Round(time.Millisecond), m.vouchFor(o), m.aliveBy[o])
		} else {
			fmt.Fprintf(&b, " %v@%d never;", o.ID, o.Ticket)
		}
	}
	if m.graceUntil.After(now.Add(-time.Minute)) {
		fmt.Fprintf(&b, " grace ended %v ago", now.Sub(m.graceUntil).Round(time.Millisecond))
	}
	return b.String()
}

func (m *Machine) noteEpoch(e uint64) { m.floor = max(m.floor, e) }
