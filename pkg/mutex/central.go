package mutex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/election"
	"github.com/roundtable-go/roundtable/pkg/node"
)

type reqKey struct {
	name   string
	client uint64
}

// request is a local client's request, waiting or held.
type request struct {
	attempt    uint64
	nonBlock   bool
	asked      time.Time // when the client asked
	held       bool
	token      uint64
	seq        uint64
	sent       map[uint64]time.Time // send time of recent copies, by seq
	next       time.Time            // next resend (waiting) or renewal (held)
	validUntil time.Time
	deferred   time.Time // a renewal held back until then (renewBurst)
	inSess     bool      // in the member's session (session.go) ...
	joinVer    uint64    // ... since this session version

	key   reqKey
	timer // in central.reqHeap; made after every request of a lower order
}

type holder struct {
	node    node.ID
	client  uint64
	attempt uint64
	token   uint64
	expires time.Time
	inSess  bool // renewed by its member's session (session.go) until its end
}

type waiter struct {
	node     node.ID
	client   uint64
	attempt  uint64
	seq      uint64
	lastSeen time.Time
}

type lock struct {
	holder *holder
	queue  []waiter

	name  string
	timer // in central.lockHeap; made after every lock of a lower order
}

// central is one lockd daemon's state under the central algorithm.
type central struct {
	cfg   Config
	n     int
	el    *election.Machine
	coord node.ID
	term  uint64

	reqs    map[reqKey]*request
	reqHeap timerHeap[*request] // reqs by due time
	made    uint64              // requests and locks made, for their order
	// what this daemon promised: it vouched for coord at term until
	// promiseUntil.
	promised      node.ID
	promisedTerm  uint64
	promisedUntil time.Time
	clock         time.Time // the latest time given to Step or Tick, for Status
	table         []LockRec // the coordinator's latest summary, for status

	// coordinator state
	leading    bool
	active     bool
	openAfter  time.Time       // unreported locks may be granted from then on ...
	opened     bool            // ... which has come
	reported   map[string]bool // names reported held since the takeover
	locks      map[string]*lock
	names      []string         // locks' names in order, for summary (a ping's table): sorted again only ...
	namesStale bool             // ... once a lock was added or forgotten, not at every ping
	namesSorts int              // how many times names was sorted (tests)
	lockHeap   timerHeap[*lock] // locks by due time
	blocked    map[string]bool  // free locks with waiters: granted by Tick once it may
	pingSeq    uint64
	pingSent   map[uint64]time.Time
	vouchUntil map[node.ID]time.Time
	nextPing   time.Time
	counter    uint64
	newTerm    bool   // the counter is at maxGrants: take a new term (renewTerm)
	attempts   uint64 // acquisitions started by this daemon's clients

	// member's session (session.go)
	sess         digest
	sessVer      uint64 // grows whenever a lock joins or leaves the session
	sessSeq      uint64
	sessSent     map[uint64]sessSend
	sessAckVer   uint64    // the locks that joined by this version ...
	sessUntil    time.Time // ... hold until then
	sessNext     time.Time // the next session renewal
	joining      map[reqKey]bool
	sessReleases []Msg
	// coordinator: every member's session
	sessions map[node.ID]*session

	loopback []Msg     // messages to ourselves (the coordinator's own clients)
	elWake   time.Time // the election's next wake-up
	out      []node.Envelope[Msg]
	events   []node.Event
}

func newCentral(cfg Config) (*central, error) {
	d := DefaultConfig()
	if cfg.Algo == 0 {
		cfg.Algo = d.Algo
	}
	if cfg.Lease <= 0 {
		cfg.Lease = d.Lease
	}
	el, err := election.New(election.Config{ID: cfg.ID, Peers: cfg.Peers, Algo: election.Bully,
		Heartbeat: cfg.Heartbeat, Timeout: cfg.Timeout, Term: cfg.Term, Rand: cfg.Rand})
	if err != nil {
		return nil, err
	}
	if cfg.Lease < 4*time.Millisecond {
		return nil, errors.New("mutex: lease must be at least 4ms")
	}
	peers := slices.Clone(cfg.Peers)
	slices.Sort(peers)
	cfg.Peers = slices.Compact(peers)
	return &central{cfg: cfg, n: len(cfg.Peers), el: el, reqs: map[reqKey]*request{},
		locks: map[string]*lock{}, blocked: map[string]bool{}, reported: map[string]bool{}, pingSent: map[uint64]time.Time{},
		vouchUntil: map[node.ID]time.Time{}, attempts: firstAttempt(cfg),
		sessSent: map[uint64]sessSend{}, joining: map[reqKey]bool{}, sessions: map[node.ID]*session{}}, nil
}

// Coordinator returns the coordinator this daemon follows and its term.
func (m *central) Coordinator() (node.ID, uint64) { return m.coord, m.term }

// Holdings lists the locks this daemon's clients hold with a lease still
// valid at now. A paused daemon cannot report a lost lease, but its
// holdings stop counting at Until all the same (lockd run enforces Until
// itself), so this, not the event stream, defines who holds what.
//
// They come in no particular order (the order of the request heap, which
// is deterministic): the service asks every eighth of a lease, and a
// member may hold thousands of locks with names of up to 255 bytes.
func (m *central) Holdings(now time.Time) []Holding {
	var out []Holding
	for _, r := range m.reqHeap {
		if v := m.validity(r); r.held && now.Before(v) {
			out = append(out, Holding{Name: r.key.name, Client: r.key.client, Token: r.token, Until: v})
		}
	}
	return out
}

// Held reports whether the local client holds name with a valid lease.
func (m *central) Held(name string, client uint64) (uint64, bool) {
	r := m.reqs[reqKey{name, client}]
	if r == nil || !r.held {
		return 0, false
	}
	return r.token, true
}

// Status describes the daemon and, as far as it knows, the lock table: a
// follower's is the one the coordinator last sent (at most a quarter
// lease old); the coordinator's own is current.
func (m *central) Status() any {
	rows := m.table
	if m.leading {
		rows = m.summary()
	}
	byName := map[string]*LockStatus{}
	var order []string
	for _, r := range rows {
		l := byName[r.Name]
		if l == nil {
			l = &LockStatus{Name: r.Name}
			byName[r.Name] = l
			order = append(order, r.Name)
		}
		if r.Token != 0 {
			l.Holder, l.Client, l.Token = r.Node, r.Client, r.Token
		} else {
			l.Queue = append(l.Queue, fmt.Sprintf("%d/%d", r.Node, r.Client))
		}
	}
	locks := []*LockStatus{}
	for _, n := range order {
		locks = append(locks, byName[n])
	}
	return map[string]any{"id": m.cfg.ID, "algo": m.cfg.Algo.String(), "coordinator": m.coord, "term": m.term,
		"leading": m.leading, "active": m.active, "locks": locks,
		// A coordinator without a majority, or a member that follows
		// none (or has not heard its coordinator's ping for a promise),
		// cannot grant: clients that time out say "no quorum".
		"quorum": m.quorum(m.clock)}
}

func (m *central) quorum(now time.Time) bool {
	if m.leading {
		return m.active && m.majority(now)
	}
	return m.coord != node.None && now.Before(m.promisedUntil)
}

func (m *central) send(to node.ID, msg Msg) {
	if to == m.cfg.ID {
		// The coordinator's own clients: deliver locally, in order.
		m.loopback = append(m.loopback, msg)
		return
	}
	m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: to, Msg: msg})
}

// Step implements node.Machine.
func (m *central) Step(now time.Time, in node.Envelope[Msg]) error {
	m.clock = now
	defer m.renewTerm(now)
	if in.From == m.cfg.ID {
		return m.local(now, in.Msg)
	}
	if !slices.Contains(m.cfg.Peers, in.From) {
		return fmt.Errorf("mutex: message from %d, not a peer", in.From)
	}
	if in.Msg.Type == MsgElection {
		err := m.el.Step(now, node.Envelope[election.Msg]{From: in.From, To: in.To, Msg: in.Msg.Elect})
		m.afterElection(now)
		return err
	}
	m.handle(now, in.From, in.Msg)
	m.drainLoopback(now)
	return nil
}

func (m *central) drainLoopback(now time.Time) {
	for len(m.loopback) > 0 {
		msg := m.loopback[0]
		m.loopback = m.loopback[1:]
		m.handle(now, m.cfg.ID, msg)
	}
}

func (m *central) local(now time.Time, msg Msg) error {
	k := reqKey{msg.Name, msg.Client}
	switch msg.Type {
	case LocalAcquire:
		if msg.Name == "" || len(msg.Name) > maxName {
			return fmt.Errorf("mutex: lock name must be 1 to %d bytes", maxName)
		}
		if _, dup := m.reqs[k]; dup {
			return fmt.Errorf("mutex: client %d already holds or waits for %q", msg.Client, msg.Name)
		}
		if msg.NonBlock && m.coord == node.None {
			m.events = append(m.events, UnavailableEvent{Event: "unavailable", Name: msg.Name, Client: msg.Client,
				Reason: "no coordinator yet"})
			return nil
		}
		m.attempts++
		r := &request{attempt: m.attempts, nonBlock: msg.NonBlock, sent: map[uint64]time.Time{}, asked: now, key: k, timer: timer{idx: -1}}
		m.made++
		r.order = m.made
		m.reqs[k] = r
		m.sendAcquire(now, k, r)
	case LocalRelease:
		r := m.reqs[k]
		if r == nil {
			return nil
		}
		rel := Msg{Type: MsgRelease, Term: m.term, Name: k.name, Client: k.client, Token: r.token, Attempt: r.attempt}
		m.released(r, rel)
		m.dropReq(k)
		if m.coord != node.None {
			m.send(m.coord, rel)
		}
		if r.held {
			m.events = append(m.events, ReleasedEvent{Event: "released", Name: k.name, Client: k.client, Token: r.token})
		}
	default:
		return fmt.Errorf("mutex: %v is not a local request", msg.Type)
	}
	m.drainLoopback(now)
	return nil
}

func (m *central) stamp(now time.Time, r *request) uint64 {
	r.seq++
	r.sent[r.seq] = now
	delete(r.sent, r.seq-8)
	r.next = now.Add(m.cfg.Lease / 8)
	m.schedule(r)
	return r.seq
}

func (m *central) sendAcquire(now time.Time, k reqKey, r *request) {
	seq := m.stamp(now, r)
	if m.coord != node.None {
		m.send(m.coord, Msg{Type: MsgAcquire, Term: m.term, Seq: seq, Name: k.name, Client: k.client, NonBlock: r.nonBlock, Attempt: r.attempt})
	}
}

// renewal stamps one held lock's renewal, for the next batch.
func (m *central) renewal(now time.Time, k reqKey, r *request) LockRec {
	m.join(r)
	return LockRec{Name: k.name, Node: m.cfg.ID, Client: k.client, Token: r.token, Attempt: m.stamp(now, r)}
}

// sendRenewals sends the due renewals in as few messages as fit: a member
// may hold thousands of locks, each renewed every eighth of a lease.
func (m *central) sendRenewals(recs []LockRec) {
	if m.coord == node.None {
		return
	}
	for len(recs) > 0 {
		n := fit(recs, listBudget)
		m.send(m.coord, Msg{Type: MsgRenew, Term: m.term, Locks: recs[:n]})
		recs = recs[n:]
	}
}

// afterElection follows leadership changes of the embedded election.
func (m *central) afterElection(now time.Time) {
	rd := m.el.Ready()
	for _, env := range rd.Msgs {
		m.out = append(m.out, node.Envelope[Msg]{From: env.From, To: env.To, Msg: Msg{Type: MsgElection, Elect: env.Msg}})
	}
	m.elWake = rd.Wake
	for _, ev := range rd.Events {
		le, ok := ev.(election.LeaderEvent)
		if !ok {
			if _, down := ev.(election.StepDownEvent); down {
				m.stopLeading()
			}
			continue
		}
		if le.Leader == m.coord && le.Term == m.term {
			continue
		}
		m.coord, m.term = le.Leader, le.Term
		m.resetSession()
		m.events = append(m.events, CoordinatorEvent{Event: "coordinator", Coordinator: le.Leader, Term: le.Term})
		if le.Self {
			m.startLeading(now)
		} else {
			m.stopLeading()
		}
		// Tell the new coordinator at once what we wait for and hold.
		var renewals []LockRec
		for _, k := range m.sortedReqs() {
			r := m.reqs[k]
			if r.held {
				renewals = append(renewals, m.renewal(now, k, r))
			} else {
				m.sendAcquire(now, k, r)
			}
		}
		m.sendRenewals(renewals)
	}
	m.drainLoopback(now)
}

func (m *central) sortedReqs() []reqKey {
	keys := make([]reqKey, 0, len(m.reqs))
	for k := range m.reqs {
		keys = append(keys, k)
	}
	sortKeys(keys)
	return keys
}

func (m *central) startLeading(now time.Time) {
	m.leading, m.active, m.opened, m.openAfter = true, false, false, time.Time{}
	m.forgetLocks()
	clear(m.reported)
	clear(m.vouchUntil)
	clear(m.pingSent)
	m.counter = m.cfg.firstCounter
	m.nextPing = now
}

// maxGrants is how many grants a term can number: tokens are
// term<<32 | counter, so a coordinator whose counter would pass 32 bits
// asks its election for a new term instead (newTerm), and grants again
// under it, after the usual takeover, with tokens above every earlier one.
const maxGrants = 1<<32 - 1

// renewTerm acts on newTerm: step down and campaign, which the embedded
// election turns into leadership of a higher term.
func (m *central) renewTerm(now time.Time) {
	if !m.newTerm {
		return
	}
	m.newTerm = false
	if m.leading {
		_ = m.el.Step(now, node.Envelope[election.Msg]{From: m.cfg.ID, To: m.cfg.ID, Msg: election.Msg{Type: election.MsgNewTerm}})
		m.afterElection(now)
	}
}

// forgetLocks empties the coordinator's lock table.
func (m *central) forgetLocks() {
	clear(m.locks)
	clear(m.sessions)
	m.namesStale = true
	clear(m.blocked)
	clear(m.lockHeap)
	m.lockHeap = m.lockHeap[:0]
}

func (m *central) stopLeading() {
	m.leading, m.active = false, false
	m.forgetLocks()
	m.nextPing = time.Time{}
}

// selfVouch: a coordinator counts itself only once its own promise to
// another coordinator has run out.
func (m *central) selfVouch(now time.Time) bool {
	return m.promised == m.cfg.ID && m.promisedTerm == m.term || !now.Before(m.promisedUntil)
}

// promise is how long a follower's vouch binds it to one coordinator, and
// so how long a dead coordinator's authority outlives its last ping: half
// a lease. A holder renews every eighth of a lease and holds for 0.9 of
// one from each renewal it sends, so a new coordinator — elected, then
// vouched for by a majority once their promises to the old one ran out,
// then told by the members who holds what — adopts the holders before
// their leases end: killing the coordinator costs no holder its lock
// when the election ends within about a quarter lease (the defaults:
// 250 ms of a 1 s lease).
func (m *central) promise() time.Duration { return m.cfg.Lease / 2 }

func (m *central) majority(now time.Time) bool {
	count := 0
	if m.selfVouch(now) {
		count++
	}
	for p, until := range m.vouchUntil {
		if p != m.cfg.ID && now.Before(until) {
			count++
		}
	}
	return 2*count > m.n
}

func (m *central) handle(now time.Time, from node.ID, msg Msg) {
	switch msg.Type {
	case MsgPing:
		m.onPing(now, from, msg)
	case MsgVouch:
		if m.leading && msg.Term == m.term {
			if sent, ok := m.pingSent[msg.Seq]; ok {
				until := sent.Add(time.Duration(safety * float64(m.promise())))
				if until.After(m.vouchUntil[from]) {
					m.vouchUntil[from] = until
				}
				m.activate(now)
			}
		}
	case MsgCollect:
		if from == m.coord && msg.Term == m.term {
			m.report(now, from)
			// And renew at once, right behind the report (which installs
			// the holders): a holder should not wait for its next renewal
			// to learn that the new coordinator keeps its lease.
			var renewals []LockRec
			for _, k := range m.sortedReqs() {
				if r := m.reqs[k]; r.held && now.Before(r.validUntil) {
					renewals = append(renewals, m.renewal(now, k, r))
				}
			}
			m.sendRenewals(renewals)
		}
	case MsgReport:
		if m.leading && msg.Term == m.term {
			m.onReport(now, from, msg)
		}
	case MsgAcquire:
		if m.leading {
			m.onAcquire(now, from, msg)
		}
	case MsgRenew:
		if m.leading {
			m.onRenews(now, from, msg)
		}
	case MsgRelease:
		if m.leading {
			m.onRelease(now, from, msg)
		}
	case MsgSession:
		if m.leading && msg.Term == m.term {
			m.onSession(now, from, msg)
		}
	case MsgSessionAck:
		m.onSessionAck(now, from, msg)
	case MsgRenewAck:
		// Renewals travel in batches (see renewDue): one record per lock,
		// the renewal's Seq in Attempt.
		for _, rec := range msg.Locks {
			m.onReply(now, from, Msg{Type: MsgRenewAck, Term: msg.Term, Seq: rec.Attempt, Name: rec.Name, Client: rec.Client, Token: rec.Token})
		}
	case MsgGrant, MsgBusy, MsgRevoked, MsgUnavailable:
		m.onReply(now, from, msg)
	}
}

// --- follower side

func (m *central) onPing(now time.Time, from node.ID, msg Msg) {
	if from != m.coord || msg.Term != m.term {
		return // not the coordinator we follow: no vouch
	}
	m.table = msg.Locks
	if (m.promised != from || m.promisedTerm != msg.Term) && now.Before(m.promisedUntil) {
		return // still bound by a promise to another coordinator
	}
	m.promised, m.promisedTerm, m.promisedUntil = from, msg.Term, now.Add(m.promise())
	m.send(from, Msg{Type: MsgVouch, Term: msg.Term, Seq: msg.Seq})
}

func (m *central) report(now time.Time, to node.ID) {
	var recs []LockRec
	for _, k := range m.sortedReqs() {
		r := m.reqs[k]
		rec := LockRec{Name: k.name, Node: m.cfg.ID, Client: k.client, Attempt: r.attempt}
		if r.held {
			if !now.Before(r.validUntil) {
				continue // about to be reported lost
			}
			rec.Token = r.token
		}
		recs = append(recs, rec)
	}
	// In as many messages as it takes: a member may hold thousands of
	// locks, and every frame is bounded (the coordinator takes each record
	// on its own).
	for len(recs) > 0 {
		n := fit(recs, listBudget)
		m.send(to, Msg{Type: MsgReport, Term: m.term, Locks: recs[:n]})
		recs = recs[n:]
	}
}

func (m *central) onReply(now time.Time, from node.ID, msg Msg) {
	if from != m.coord {
		return
	}
	k := reqKey{msg.Name, msg.Client}
	r := m.reqs[k]
	if r == nil {
		if msg.Type == MsgGrant {
			// Granted to a client that left: give it back.
			m.send(from, Msg{Type: MsgRelease, Term: m.term, Name: msg.Name, Client: msg.Client, Token: msg.Token, Attempt: msg.Attempt})
		}
		return
	}
	sent, known := r.sent[msg.Seq]
	switch msg.Type {
	case MsgGrant:
		if r.held || !known || msg.Attempt != r.attempt {
			return
		}
		valid := sent.Add(time.Duration(safety * float64(m.cfg.Lease)))
		if !now.Before(valid) {
			return // the answer is too old to rely on; our resend will get a fresh one
		}
		r.held, r.token, r.validUntil = true, msg.Token, valid
		// The first renewal is due an eighth of a lease after the request
		// this grant answers was sent, as every later one is after the
		// renewal before it (rule 2 counts the lease from that send), not
		// after the grant's arrival: a grant that a starved coordinator
		// answered late brings a lease already partly spent, and is
		// renewed (and joins the session) at once rather than an eighth
		// of a lease later, when what is left may have run out.
		r.next = sent.Add(m.cfg.Lease / 8)
		m.schedule(r)
		m.events = append(m.events, GrantEvent{Event: "acquired", Name: k.name, Client: k.client, Token: msg.Token, Valid: valid.Sub(now), At: now})
	case MsgBusy:
		if !r.held && r.nonBlock && msg.Attempt == r.attempt {
			m.dropReq(k)
			m.events = append(m.events, BusyEvent{Event: "busy", Name: k.name, Client: k.client})
		}
	case MsgUnavailable:
		if !r.held && r.nonBlock && msg.Attempt == r.attempt {
			m.dropReq(k)
			m.events = append(m.events, UnavailableEvent{Event: "unavailable", Name: k.name, Client: k.client,
				Reason: "the coordinator cannot grant yet: it is taking over, or has no majority"})
		}
	case MsgRenewAck:
		if r.held && known && msg.Token == r.token {
			delete(m.joining, k)
			if v := sent.Add(time.Duration(safety * float64(m.cfg.Lease))); v.After(r.validUntil) {
				r.validUntil = v
				m.schedule(r)
			}
		}
	case MsgRevoked:
		if r.held && msg.Token == r.token {
			m.lose(k, r, "revoked by the coordinator")
		}
	}
}

func (m *central) lose(k reqKey, r *request, reason string) {
	m.dropReq(k)
	m.events = append(m.events, LostEvent{Event: "lost", Name: k.name, Client: k.client, Token: r.token, Reason: reason})
}

// --- coordinator side

func (m *central) activate(now time.Time) {
	if m.active || !m.majority(now) {
		return
	}
	m.active = true
	m.openAfter, m.opened = now.Add(m.cfg.Lease), false
	if m.cfg.noTakeoverWait {
		m.openAfter, m.opened = time.Time{}, true
	}
	for _, p := range m.cfg.Peers {
		if p != m.cfg.ID {
			m.send(p, Msg{Type: MsgCollect, Term: m.term})
		}
	}
	m.report(now, m.cfg.ID) // our own clients, through the loopback
}

func (m *central) lockOf(name string) *lock {
	l := m.locks[name]
	if l == nil {
		m.made++
		l = &lock{name: name, timer: timer{idx: -1, order: m.made}}
		m.locks[name] = l
		m.namesStale = true
	}
	return l
}

func (m *central) onReport(now time.Time, from node.ID, msg Msg) {
	for _, rec := range msg.Locks {
		if rec.Node != from || rec.Name == "" {
			continue
		}
		l := m.lockOf(rec.Name)
		if rec.Token != 0 {
			// Reported held: the previous coordinator's only valid
			// grant of this name. (A waiter's report proves nothing
			// about holders that have not reported yet.)
			m.reported[rec.Name] = true
		}
		switch {
		case rec.Token != 0 && l.holder == nil:
			m.setHolder(l, &holder{node: from, client: rec.Client, attempt: rec.Attempt, token: rec.Token, expires: now.Add(m.cfg.Lease)})
			l.queue = slices.DeleteFunc(l.queue, func(w waiter) bool { return w.node == from && w.client == rec.Client })
		case rec.Token == 0 && !l.waiting(from, rec.Client) && !l.holds(from, rec.Client):
			l.queue = append(l.queue, waiter{node: from, client: rec.Client, attempt: rec.Attempt, lastSeen: now})
		}
		m.tidy(l)
	}
}

func (l *lock) holds(n node.ID, c uint64) bool {
	return l.holder != nil && l.holder.node == n && l.holder.client == c
}

func (l *lock) waiting(n node.ID, c uint64) bool {
	return slices.ContainsFunc(l.queue, func(w waiter) bool { return w.node == n && w.client == c })
}

func (m *central) grantable(now time.Time, name string) bool {
	return m.active && m.majority(now) && (m.reported[name] || m.opened)
}

func (m *central) onAcquire(now time.Time, from node.ID, msg Msg) {
	l := m.lockOf(msg.Name)
	defer m.tidy(l)
	if l.holds(from, msg.Client) && l.holder.attempt != msg.Attempt {
		if msg.Attempt < l.holder.attempt {
			return // a late copy of a request that was granted and is over
		}
		// The client released and asks again; the release was lost.
		m.setHolder(l, nil)
	}
	// A newer request of a client that is queued replaces the old one at
	// the back of the line (first come, first served: it did not wait
	// all along; the old one may have been answered busy, or withdrawn
	// by a release still on its way); a late copy of an older one is
	// ignored.
	if i := slices.IndexFunc(l.queue, func(w waiter) bool { return w.node == from && w.client == msg.Client }); i >= 0 && l.queue[i].attempt != msg.Attempt {
		if msg.Attempt < l.queue[i].attempt {
			return
		}
		l.queue = slices.Delete(l.queue, i, i+1)
	}
	switch {
	case l.holds(from, msg.Client):
		// A resend: the grant was lost. Grant again, same token.
		l.holder.expires = laterOf(l.holder.expires, now.Add(m.cfg.Lease))
		if m.majority(now) {
			m.send(from, Msg{Type: MsgGrant, Term: m.term, Seq: msg.Seq, Name: msg.Name, Client: msg.Client,
				Token: l.holder.token, Attempt: msg.Attempt})
		}
		return
	case l.holder != nil && msg.NonBlock:
		m.send(from, Msg{Type: MsgBusy, Term: m.term, Seq: msg.Seq, Name: msg.Name, Client: msg.Client, Attempt: msg.Attempt})
		return
	}
	i := slices.IndexFunc(l.queue, func(w waiter) bool { return w.node == from && w.client == msg.Client })
	if i < 0 {
		l.queue = append(l.queue, waiter{node: from, client: msg.Client})
		i = len(l.queue) - 1
	}
	l.queue[i].seq, l.queue[i].lastSeen, l.queue[i].attempt = msg.Seq, now, msg.Attempt
	if msg.NonBlock && !m.grantable(now, msg.Name) && i == 0 && l.holder == nil {
		// Not able to grant yet (takeover in progress, or no majority):
		// say so rather than leave a non-blocking caller hanging, and
		// not as "busy": nobody may hold the name.
		l.queue = l.queue[1:]
		m.send(from, Msg{Type: MsgUnavailable, Term: m.term, Seq: msg.Seq, Name: msg.Name, Client: msg.Client, Attempt: msg.Attempt})
		return
	}
	m.grantNext(now, msg.Name)
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// grantNext hands a free lock to the first live waiter (FCFS).
func (m *central) grantNext(now time.Time, name string) {
	l := m.locks[name]
	if l == nil {
		return
	}
	defer m.tidy(l)
	if l.holder != nil || len(l.queue) == 0 || !m.grantable(now, name) {
		return
	}
	if m.counter >= maxGrants {
		m.newTerm = true // this term's numbers are used up
		return
	}
	i := 0
	if m.cfg.centralLIFO {
		i = len(l.queue) - 1
	}
	w := l.queue[i]
	l.queue = slices.Delete(l.queue, i, i+1)
	m.counter++
	tok := m.term<<32 | m.counter
	m.setHolder(l, &holder{node: w.node, client: w.client, attempt: w.attempt, token: tok, expires: now.Add(m.cfg.Lease)})
	m.send(w.node, Msg{Type: MsgGrant, Term: m.term, Seq: w.seq, Name: name, Client: w.client, Token: tok, Attempt: w.attempt})
}

// onRenews takes a batch of renewals and answers the ones it extends in
// batches of its own.
func (m *central) onRenews(now time.Time, from node.ID, msg Msg) {
	var acks []LockRec
	majority := m.majority(now) // once per batch: the same for every record
	for _, rec := range msg.Locks {
		if m.renew(now, from, rec, majority) {
			acks = append(acks, rec)
		}
	}
	for len(acks) > 0 {
		n := fit(acks, listBudget)
		m.send(from, Msg{Type: MsgRenewAck, Term: m.term, Locks: acks[:n]})
		acks = acks[n:]
	}
}

// renew extends one holder's lease, if it still holds; a holder this
// coordinator knows to be gone is told its lock is revoked.
func (m *central) renew(now time.Time, from node.ID, rec LockRec, majority bool) bool {
	l := m.locks[rec.Name]
	if l == nil || !l.holds(from, rec.Client) || l.holder.token != rec.Token {
		if m.active && (m.reported[rec.Name] || m.opened) {
			m.send(from, Msg{Type: MsgRevoked, Term: m.term, Name: rec.Name, Client: rec.Client, Token: rec.Token})
		}
		return false
	}
	if !majority {
		return false
	}
	l.holder.expires = laterOf(l.holder.expires, now.Add(m.cfg.Lease))
	m.enter(l)
	m.tidy(l)
	return true
}

func (m *central) onRelease(now time.Time, from node.ID, msg Msg) {
	l := m.locks[msg.Name]
	if l == nil {
		return
	}
	if l.holds(from, msg.Client) && l.holder.attempt == msg.Attempt {
		m.setHolder(l, nil)
	}
	l.queue = slices.DeleteFunc(l.queue, func(w waiter) bool {
		return w.node == from && w.client == msg.Client && w.attempt == msg.Attempt
	})
	m.grantNext(now, msg.Name)
}

// Tick implements node.Machine.
func (m *central) Tick(now time.Time) {
	m.clock = now
	m.renewTerm(now)
	m.el.Tick(now)
	m.afterElection(now)
	var renewals []LockRec
	var renewable []*request // held, with a renewal due (see below)
	// Only the requests due by the end of this renewal batch (see below).
	for _, r := range m.dueReqs(now.Add(m.cfg.Lease / 32)) {
		k := r.key
		if r.held {
			r.validUntil = m.validity(r) // what the session gave it
		}
		switch {
		case m.reqs[k] != r: // given up above
		case r.held && !now.Before(r.validUntil):
			rel := Msg{Type: MsgRelease, Term: m.term, Name: k.name, Client: k.client, Token: r.token, Attempt: r.attempt}
			m.released(r, rel)
			m.lose(k, r, "lease expired")
			if m.coord != node.None {
				m.send(m.coord, rel)
			}
		case r.held && r.inSess && r.validUntil.Sub(now) > m.cfg.Lease/2:
			// Renewed by the session: no per-lock renewal until its
			// cover runs short (matched session renewals stopped).
			r.next = r.validUntil.Add(-m.cfg.Lease / 2)
			m.schedule(r)
		case r.held && !now.Before(r.next.Add(-m.cfg.Lease/32)) && !now.Before(r.deferred):
			// Renewals due within the next 1/32 of a lease go now too:
			// they travel together, and the machine wakes once per batch
			// rather than once per lock (a member may hold thousands).
			renewable = append(renewable, r)
		case r.held:
			// A renewal held back (above), not due yet.
		case r.nonBlock && !r.held && now.Sub(r.asked) >= m.cfg.Lease/2:
			// A non-blocking request the coordinator never answered: it
			// is out of reach (this member is cut off, or it is gone).
			m.dropReq(k)
			if m.coord != node.None {
				m.send(m.coord, Msg{Type: MsgRelease, Term: m.term, Name: k.name, Client: k.client, Attempt: r.attempt})
			}
			m.events = append(m.events, UnavailableEvent{Event: "unavailable", Name: k.name, Client: k.client,
				Reason: "no answer from the coordinator"})
		case !now.Before(r.next):
			m.sendAcquire(now, k, r)
		}
	}
	// At most renewBurst bytes of renewals: the rest follow a pace later
	// (renewPace), so that thousands of renewals, which the batching
	// draws together, never reach the coordinator as one burst larger
	// than its socket takes. The longest due go first: when this
	// member's ticks come late (it is starved of CPU) and the budget
	// cannot carry every due renewal, the delay is shared by all locks,
	// instead of the locks made last being put off at every tick until
	// their leases run out. Longest due means nearest its lease's end: a
	// renewal that was lost (the coordinator's socket overflowed) or
	// answered late leaves its lock the least time, and it goes at the
	// head of the next batch rather than wherever its lock fell before.
	slices.SortStableFunc(renewable, func(a, b *request) int {
		if c := a.validUntil.Compare(b.validUntil); c != 0 {
			return c
		}
		return a.next.Compare(b.next)
	})
	size := 0 // the renewals' bytes, against renewBurst
	for _, r := range renewable {
		if size += len(r.key.name) + 4*binary.MaxVarintLen64; size > renewBurst {
			r.deferred = now.Add(m.renewPace())
			m.schedule(r)
			continue
		}
		renewals = append(renewals, m.renewal(now, r.key, r))
	}
	m.sendRenewals(renewals)
	m.sendSession(now) // behind the renewals that join locks to it
	if m.leading {
		m.coordinatorTick(now)
	}
	m.drainLoopback(now)
}

// renewBurst bounds the bytes of renewal records a member sends at one
// Tick: 16 frames, half a megabyte, a quarter of the 1 MiB receive buffer
// the transport asks for (which the kernel doubles). The rest go renewPace
// later, so 10,000 renewals of 255-byte names (2.9 MB per eighth of a
// lease) go in six bursts a 64th of a lease apart.
const renewBurst = 16 * listBudget

func (m *central) renewPace() time.Duration { return m.cfg.Lease / 64 }

func (m *central) coordinatorTick(now time.Time) {
	if !now.Before(m.nextPing) {
		m.pingSeq++
		m.pingSent[m.pingSeq] = now
		delete(m.pingSent, m.pingSeq-16)
		table := m.summary()
		// The table rides along for followers' status only: as much of it
		// as fits, so that the ping, which carries the coordinator's
		// authority, always fits a frame.
		shown := table[:fit(table, listBudget)]
		for _, p := range m.cfg.Peers {
			if p != m.cfg.ID {
				m.send(p, Msg{Type: MsgPing, Term: m.term, Seq: m.pingSeq, Locks: shown})
			}
		}
		m.table = table
		m.nextPing = now.Add(m.promise() / 4)
	}
	m.activate(now)
	if m.active && !m.opened && !now.Before(m.openAfter) {
		m.opened, m.openAfter = true, time.Time{}
	}
	for p, until := range m.vouchUntil {
		if !now.Before(until) {
			delete(m.vouchUntil, p)
		}
	}
	// The locks whose holder's lease or a waiter's wait ran out, and the
	// free ones with waiters, which may be granted now (after a takeover
	// or once the majority is back): no other lock can change.
	m.expireSessions(now)
	names := m.dueLocks(now)
	if m.active && m.majority(now) {
		for name := range m.blocked {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		l := m.locks[name]
		if l == nil {
			continue
		}
		if l.holder != nil && !l.holder.inSess && !now.Before(l.holder.expires) {
			l.holder = nil // the holder's lease is over: it has given up
		}
		l.queue = slices.DeleteFunc(l.queue, func(w waiter) bool { return now.Sub(w.lastSeen) > m.cfg.Lease })
		m.tidy(l)
		m.grantNext(now, name)
	}
}

func (m *central) summary() []LockRec {
	var out []LockRec
	if m.namesStale {
		m.names = slices.AppendSeq(m.names[:0], maps.Keys(m.locks))
		slices.Sort(m.names)
		m.namesStale, m.namesSorts = false, m.namesSorts+1
	}
	for _, name := range m.names {
		l := m.locks[name]
		if l == nil {
			continue
		}
		if l.holder != nil {
			out = append(out, LockRec{Name: name, Node: l.holder.node, Client: l.holder.client, Token: l.holder.token})
		}
		for _, w := range l.queue {
			out = append(out, LockRec{Name: name, Node: w.node, Client: w.client})
		}
		if len(out) >= maxLocks {
			return out[:maxLocks]
		}
	}
	return out
}

// Ready implements node.Machine.
func (m *central) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: m.out, Events: m.events, Wake: m.elWake}
	m.out, m.events = nil, nil
	wake := func(t time.Time) {
		if !t.IsZero() && (r.Wake.IsZero() || t.Before(r.Wake)) {
			r.Wake = t
		}
	}
	if len(m.reqHeap) > 0 {
		wake(m.reqHeap[0].due)
	}
	if m.coord != node.None && m.sess.count > 0 {
		wake(m.sessNext)
	}
	if m.leading {
		wake(m.nextPing)
		wake(m.openAfter)
		if len(m.lockHeap) > 0 {
			wake(m.lockHeap[0].due)
		}
		for _, until := range m.vouchUntil {
			wake(until)
		}
		for _, s := range m.sessions {
			wake(s.until)
		}
	}
	return r
}
