package election

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/fd"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Algo selects the election algorithm.
type Algo uint8

const (
	Bully        Algo = 1
	Ring         Algo = 2
	ChangRoberts Algo = 3
)

func (a Algo) String() string {
	switch a {
	case Bully:
		return "bully"
	case Ring:
		return "ring"
	case ChangRoberts:
		return "chang-roberts"
	}
	return fmt.Sprintf("algo(%d)", uint8(a))
}

// ParseAlgo parses "bully", "ring" or "chang-roberts".
func ParseAlgo(s string) (Algo, error) {
	for _, a := range []Algo{Bully, Ring, ChangRoberts} {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("election: unknown algorithm %q (want bully, ring or chang-roberts)", s)
}

// Config configures a Machine. Zero values mean the default.
type Config struct {
	ID    node.ID   // this process; must be in Peers
	Peers []node.ID // every member, this process included; identical on all members
	Algo  Algo      // default Bully

	// Priority ranks candidates: the live process with the highest
	// priority wins, ties broken by the higher ID. Default: the ID.
	Priority uint64

	Heartbeat     time.Duration // leader heartbeat period; default 50ms
	Timeout       time.Duration // silence after which the leader is suspected; default 4·Heartbeat
	AnswerTimeout time.Duration // wait for an answer or a hop acknowledgement (> 2·MDT + MHT); default Heartbeat
	// CoordinatorTimeout is how long a bully candidate that was answered
	// waits for the coordinator message before starting again; default Timeout.
	CoordinatorTimeout time.Duration

	// Term is the highest term known at start, for a process restarting
	// from stable storage. Default 0.
	Term uint64

	// Rand supplies jitter for ring initiations. Default: a fixed seed
	// derived from ID (deterministic).
	Rand *rand.Rand

	// Lease, when positive, turns leader leases on (doc.go "Leases"): a
	// leader holds the lease only while a majority, itself included, has
	// acknowledged one of its heartbeats within Lease, and a process
	// acknowledges no other leader before its promise has run out. Must be
	// at least 2·Heartbeat.
	Lease time.Duration
	// Drift bounds how far any process's clock rate may be from real time
	// (0.01 = 1%); leases are shortened to cover it. Default 0.01.
	Drift float64
	// Guard is how long before the lease's end, as the followers' promises
	// bound it, the leader's own lease ends: the time to stop what the
	// lease protects. Default Lease/10.
	Guard time.Duration

	// Awareness caps the local health score (doc.go "Local health"): a
	// process whose own timers fire late, or whose leader's heartbeats
	// reach it in a burst, stretches its suspicion timeouts up to
	// (1+Awareness)× instead of suspecting the leader. Default 3;
	// negative turns it off.
	Awareness int
	// LateSlack is how late a timer may fire before it counts against the
	// health score; default Heartbeat/2.
	LateSlack time.Duration
	// HealthDecay is how long a process must run on time before its
	// health score drops by one; default 50·Timeout (10s): a busy host
	// stalls again within seconds, and the score should still be up then.
	HealthDecay time.Duration

	// Backups, with Algo ChangRoberts, backs every claim up on the next
	// Backups members (backup.go; Arantes and Sopena §III): the election
	// survives the crash of up to Backups consecutive claim holders
	// without starting again. 0, the default, keeps the acknowledged ring.
	Backups int

	// Tests only: the claim checker's hooks and planted bugs (backup.go).
	onEmit    func(self, origin node.ID, round, count uint64, to []node.ID)
	onHold    func(self, origin node.ID, round, count uint64)
	onBackup  func(self, origin node.ID, round uint64)
	backupBug backupBug

	// leaseBug plants a bug for the lease checker. Tests only.
	leaseBug leaseBug

	// naiveTerms plants a bug for the checkers to catch: winners take
	// term+1 instead of an owned term. Tests only.
	naiveTerms bool
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{Algo: Bully, Heartbeat: 50 * time.Millisecond, Timeout: 200 * time.Millisecond,
		AnswerTimeout: 50 * time.Millisecond, Awareness: 3}
}

func (c *Config) fill() error {
	d := DefaultConfig()
	if c.Algo == 0 {
		c.Algo = d.Algo
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = d.Heartbeat
	}
	if c.Timeout <= 0 {
		c.Timeout = 4 * c.Heartbeat
	}
	if c.AnswerTimeout <= 0 {
		c.AnswerTimeout = c.Heartbeat
	}
	if c.CoordinatorTimeout <= 0 {
		c.CoordinatorTimeout = c.Timeout
	}
	if c.Priority == 0 {
		c.Priority = uint64(c.ID)
	}
	if c.Awareness == 0 {
		c.Awareness = d.Awareness
	}
	if c.LateSlack <= 0 {
		c.LateSlack = c.Heartbeat / 2
	}
	if c.HealthDecay <= 0 {
		c.HealthDecay = 50 * c.Timeout
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(uint64(c.ID), 0x5eed))
	}
	switch {
	case c.ID == node.None:
		return errors.New("election: ID must not be 0")
	case !slices.Contains(c.Peers, c.ID):
		return fmt.Errorf("election: own id %d is not in the peer list", c.ID)
	case c.Timeout < 2*c.Heartbeat:
		return fmt.Errorf("election: timeout %v must be at least twice the heartbeat %v", c.Timeout, c.Heartbeat)
	case c.Algo < Bully || c.Algo > ChangRoberts:
		return fmt.Errorf("election: unknown algorithm %d", c.Algo)
	case c.Lease < 0:
		return fmt.Errorf("election: negative lease %v", c.Lease)
	case c.Awareness > 20:
		return fmt.Errorf("election: awareness %d above 20", c.Awareness)
	case c.Backups < 0 || c.Backups > 0 && c.Algo != ChangRoberts:
		return fmt.Errorf("election: backups %d: want 0, or more with chang-roberts", c.Backups)
	case c.Backups >= len(c.Peers):
		return fmt.Errorf("election: backups %d: want fewer than the %d members", c.Backups, len(c.Peers))
	}
	if c.Lease == 0 {
		return nil
	}
	if c.Drift <= 0 {
		c.Drift = 0.01
	}
	if c.Guard <= 0 {
		c.Guard = c.Lease / 10
	}
	switch {
	case c.Lease < 2*c.Heartbeat:
		return fmt.Errorf("election: lease %v must be at least twice the heartbeat %v", c.Lease, c.Heartbeat)
	case c.Drift >= 0.2:
		return fmt.Errorf("election: clock drift %v must be below 0.2", c.Drift)
	case time.Duration(float64(c.Lease)*(1-c.Drift)/(1+c.Drift))-c.Guard <= c.Heartbeat:
		return fmt.Errorf("election: lease %v leaves no time after drift %v and guard %v", c.Lease, c.Drift, c.Guard)
	}
	return nil
}

// LeaderEvent reports a change of leader or term as seen by one process.
// Text form: "leader 3 term 7".
type LeaderEvent struct {
	Event  string  `json:"event"` // "leader"
	Leader node.ID `json:"leader"`
	Term   uint64  `json:"term"`
	Self   bool    `json:"self"` // this process is the leader
}

func (e LeaderEvent) Kind() string   { return "leader" }
func (e LeaderEvent) String() string { return fmt.Sprintf("leader %d term %d", e.Leader, e.Term) }

// StepDownEvent reports that this process stopped leading term Term.
type StepDownEvent struct {
	Event  string `json:"event"` // "stepdown"
	Term   uint64 `json:"term"`
	Reason string `json:"reason"`
}

func (e StepDownEvent) Kind() string   { return "stepdown" }
func (e StepDownEvent) String() string { return fmt.Sprintf("stepdown term %d (%s)", e.Term, e.Reason) }

// algorithm is what differs between the three elections: how a campaign
// starts, and how election, answer and coordinator messages are taken.
// Everything else — terms, heartbeats, failure detection, resignation — is
// the Machine's, shared (as etcd-io/raft keeps one Raft with a step
// function per role).
type algorithm interface {
	initiate(now time.Time)                           // start an election (campaign has set electing)
	election(now time.Time, from node.ID, msg Msg)    // an election message from a peer
	answer(now time.Time)                             // a higher process answered (bully)
	coordinator(now time.Time, from node.ID, msg Msg) // a coordinator message from a peer
	leaderLost(now time.Time)                         // the leader is suspected
	completed(now time.Time, msg Msg)                 // our election message came back round (rings)
	answersDue(now time.Time)                         // the answers' deadline passed (bully)
}

// common gives an algorithm the Machine and no-ops for what it does not use.
type common struct{ *Machine }

func (common) answer(time.Time)         {}
func (common) completed(time.Time, Msg) {}
func (common) answersDue(time.Time)     {}

type ringKey struct {
	typ    MsgType
	origin node.ID
	round  uint64
}

type hop struct {
	msg      Msg
	to       node.ID
	deadline time.Time
}

// downFor is how many Timeouts a process that failed to answer stays
// skipped, unless it is heard from sooner.
const downFor = 5

// Machine is one process's election state. Create it with New.
type Machine struct {
	cfg   Config
	peers []node.ID // sorted
	index map[node.ID]int
	prio  map[node.ID]uint64

	term       uint64  // highest term seen
	leader     node.ID // current leader, None while unknown
	leaderTerm uint64  // the term of the last leader reported
	leading    bool
	retired    bool
	started    bool

	hb *fd.Timeout // silence from the leader
	// Local health (doc.go "Local health"): the score, the wake-up last
	// asked for, the latest time seen, how long this process was
	// demonstrably not running since the leader was last heard, and the
	// arrival of the leader's last heartbeat (for bursts).
	health    fd.Health
	wantWake  time.Time
	lastNow   time.Time
	starved   time.Duration
	troubleAt time.Time // the last sign of trouble counted
	lastBeat  struct {
		at    time.Time
		round uint64
	}
	// leaderStretch is the multiple (1 + its score) the leader's latest
	// heartbeat said its own health asks for: a leader whose timers fire
	// late is given that much longer before it is suspected.
	leaderStretch uint8
	down          map[node.ID]time.Time // peers believed down (did not answer), when marked

	// deadlines; zero = not armed
	joinUntil   time.Time // start-up: wait to hear a leader before campaigning
	nextBeat    time.Time // leader: next heartbeat
	answerBy    time.Time // bully candidate: answers due
	coordBy     time.Time // candidate: a leader must be known by then, or start again
	electAt     time.Time // ring: jittered start of an election
	electing    bool
	answered    bool
	targets     []node.ID // bully: peers asked in this election
	round       uint64
	participant bool // Chang–Roberts
	hops        map[ringKey]*hop
	seen        map[ringKey]time.Time

	algo algorithm // what differs between bully, ring and Chang–Roberts

	lease leases // when cfg.Lease > 0 (lease.go)

	bk       backups // when cfg.Backups > 0 (backup.go)
	restarts int     // elections started again for want of a winner (tests)

	out    []node.Envelope[Msg]
	events []node.Event
}

// New returns a Machine. The runner must call Tick once at start.
func New(cfg Config) (*Machine, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	peers := slices.Clone(cfg.Peers)
	slices.Sort(peers)
	peers = slices.Compact(peers)
	m := &Machine{cfg: cfg, peers: peers, index: map[node.ID]int{}, prio: map[node.ID]uint64{},
		term: cfg.Term, hb: fd.NewTimeout(cfg.Timeout), down: map[node.ID]time.Time{},
		hops: map[ringKey]*hop{}, seen: map[ringKey]time.Time{}}
	m.health = fd.Health{Max: max(cfg.Awareness, 0), Slack: cfg.LateSlack, Decay: cfg.HealthDecay}
	for i, p := range peers {
		m.index[p] = i
		m.prio[p] = uint64(p)
	}
	m.prio[cfg.ID] = cfg.Priority
	switch cfg.Algo {
	case Bully:
		m.algo = bully{common{m}}
	case Ring:
		m.algo = ring{common{m}}
	case ChangRoberts:
		m.algo = changRoberts{ring{common{m}}}
	}
	// Circulation numbers start at a random point so a restarted process's
	// rounds are not mistaken for duplicates of its earlier life.
	m.round = cfg.Rand.Uint64() >> 16
	return m, nil
}

// Leader returns the current leader (None if unknown) and its term.
func (m *Machine) Leader() (node.ID, uint64) { return m.leader, m.leaderTerm }

// Term returns the highest term this process has seen.
func (m *Machine) Term() uint64 { return m.term }

// Status describes the machine for status queries.
func (m *Machine) Status() any {
	state := "follower"
	switch {
	case m.retired:
		state = "retired"
	case m.leading:
		state = "leader"
	case m.electing:
		state = "candidate"
	}
	st := map[string]any{"id": m.cfg.ID, "algo": m.cfg.Algo.String(), "leader": m.leader,
		"term": m.leaderTerm, "max_term": m.term, "state": state, "priority": m.cfg.Priority,
		"health": m.health.Score(m.lastNow)}
	if m.cfg.Lease > 0 {
		st["lease"] = m.lease.held
		if m.lease.held {
			st["lease_until"] = m.lease.end
		}
	}
	return st
}

// better reports whether a outranks b: higher priority, then higher ID.
func (m *Machine) better(a, b node.ID) bool {
	pa, pb := m.prio[a], m.prio[b]
	return pa > pb || pa == pb && a > b
}

// ownedTerm is the smallest term above t that id may lead.
func (m *Machine) ownedTerm(id node.ID, t uint64) uint64 {
	if m.cfg.naiveTerms {
		return t + 1
	}
	n := uint64(len(m.peers))
	idx := uint64(m.index[id])
	next := t + 1
	return next + (idx+n-next%n)%n
}

func (m *Machine) owns(id node.ID, t uint64) bool {
	return m.cfg.naiveTerms || t%uint64(len(m.peers)) == uint64(m.index[id])
}

func (m *Machine) send(to node.ID, msg Msg) {
	msg.Prio = m.cfg.Priority
	if msg.Type != MsgHeartbeat && msg.Type != MsgCoordinator {
		msg.Term = max(msg.Term, m.term)
	}
	m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: to, Msg: msg})
}

// awake measures this process's own timeliness at the start of every Step
// and Tick (doc.go "Local health"). Being called after the wake-up it last
// asked for means its timer fired late, or that it was not running to read
// frames before then: the time past the wake-up (or past the latest call,
// when the wake-up was already past) is lateness. Lateness above the slack
// raises the health score and is not counted as the leader's silence.
func (m *Machine) awake(now time.Time) {
	if m.health.Max > 0 && !m.wantWake.IsZero() {
		exp := m.wantWake
		if m.lastNow.After(exp) {
			exp = m.lastNow
		}
		if late := now.Sub(exp); late > m.health.Slack {
			m.starved += late
			m.trouble(now)
		}
	}
	if now.After(m.lastNow) {
		m.lastNow = now
	}
	m.hb.Bound = m.suspectAfter(now)
}

// suspectAfter is the silence after which the leader is suspected at now:
// Timeout stretched by this process's own score or by the leader's, as its
// latest heartbeat gave it, whichever is larger (doc.go "Local health"),
// at most (1+Awareness)·Timeout.
func (m *Machine) suspectAfter(now time.Time) time.Duration {
	k := 1 + m.health.Score(now)
	if m.health.Max > 0 {
		k = min(max(k, int(m.leaderStretch)), 1+m.health.Max)
	}
	return m.cfg.Timeout * time.Duration(k)
}

// trouble raises the health score for a sign of trouble at now. Signs
// less than a Timeout apart are one stall (a late wake-up and the burst of
// heartbeats that queued meanwhile), and count once.
func (m *Machine) trouble(now time.Time) {
	if !m.troubleAt.IsZero() && now.Sub(m.troubleAt) < m.cfg.Timeout {
		return
	}
	m.troubleAt = now
	m.health.Trouble(now)
}

// burst: two successive heartbeats of the leader, sent a Heartbeat apart,
// arrive within a quarter of one: they waited, most likely for this
// process to run (Lifeguard's "own frames queue"). Numbered heartbeats
// (leases) tell a duplicate from the next one.
func (m *Machine) burst(now time.Time, msg Msg) {
	if m.health.Max == 0 || msg.Round == 0 || msg.Leader != m.leader || msg.Term != m.leaderTerm {
		return
	}
	lb := &m.lastBeat
	if msg.Round <= lb.round {
		return
	}
	if msg.Round == lb.round+1 && now.Sub(lb.at) < m.cfg.Heartbeat/4 {
		m.trouble(now)
	}
	lb.at, lb.round = now, msg.Round
}

func (m *Machine) isDown(id node.ID, now time.Time) bool {
	t, ok := m.down[id]
	return ok && now.Sub(t) < downFor*m.cfg.Timeout
}

// Step implements node.Machine.
func (m *Machine) Step(now time.Time, in node.Envelope[Msg]) error {
	m.awake(now)
	if in.From == m.cfg.ID {
		return m.local(now, in.Msg)
	}
	if _, ok := m.index[in.From]; !ok {
		return fmt.Errorf("election: message from %d, not a member", in.From)
	}
	msg := in.Msg
	if (msg.Type == MsgHeartbeat || msg.Type == MsgCoordinator) && !m.owns(msg.Leader, msg.Term) {
		return fmt.Errorf("election: %v from %d claims term %d for %d, which it does not own (are the peer lists identical?)",
			msg.Type, in.From, msg.Term, msg.Leader)
	}
	m.start(now)
	m.prio[in.From] = msg.Prio
	delete(m.down, in.From)
	m.heardFrom(now, in.From)
	if m.retired {
		return nil
	}
	switch msg.Type {
	case MsgHeartbeat:
		m.burst(now, msg)
		m.claim(now, msg.Leader, msg.Term)
		if msg.Leader == m.leader && msg.Term == m.leaderTerm {
			m.leaderStretch = msg.Stretch
			m.hb.Bound = m.suspectAfter(now)
		}
		if m.cfg.Lease > 0 {
			m.leaseHeartbeat(now, msg.Leader, msg.Term, msg.Round, msg.Stretch)
		}
	case MsgLeaseAck:
		m.leaseAck(now, in.From, msg.Term, msg.Round, msg.Stretch)
	case MsgElection:
		m.observe(now, msg.Term)
		m.algo.election(now, in.From, msg)
	case MsgAnswer:
		m.observe(now, msg.Term)
		m.algo.answer(now)
	case MsgCoordinator:
		m.algo.coordinator(now, in.From, msg)
	case MsgClaim:
		m.observe(now, msg.Term)
		if m.withBackups() {
			m.takeClaim(now, msg)
		}
	case MsgProbe:
		m.send(in.From, Msg{Type: MsgAck, Of: MsgProbe})
	case MsgAck:
		k := ringKey{msg.Of, msg.Origin, msg.Round}
		if h := m.hops[k]; h != nil && h.to == in.From {
			delete(m.hops, k)
		}
	case MsgStale:
		m.observe(now, msg.Term)
	case MsgResign:
		if msg.Leader == in.From {
			m.leaseResigned(in.From)
		}
		if msg.Leader == m.leader && !m.leading && msg.Term == m.leaderTerm {
			m.lostLeader(now)
		}
	default:
		return fmt.Errorf("election: unexpected %v from %d", msg.Type, in.From)
	}
	return nil
}

func (m *Machine) local(now time.Time, msg Msg) error {
	m.start(now)
	switch msg.Type {
	case MsgCampaign:
		if !m.retired && !m.leading {
			m.campaign(now)
		}
	case MsgNewTerm:
		if m.leading && !m.retired {
			m.stepDown("a new term was asked for")
			m.campaign(now)
		}
	case MsgRetire:
		if m.leading {
			for _, p := range m.peers {
				if p != m.cfg.ID {
					m.send(p, Msg{Type: MsgResign, Leader: m.cfg.ID, Term: m.leaderTerm})
				}
			}
			m.stepDown("retired")
		}
		m.retired = true
		m.electing = false
	default:
		return fmt.Errorf("election: %v is not a local request", msg.Type)
	}
	return nil
}

func (m *Machine) start(now time.Time) {
	if !m.started {
		m.started = true
		m.joinUntil = now.Add(m.cfg.Timeout)
		if m.cfg.leaseBug != bugNoQuiet {
			m.lease.quietUntil = now.Add(m.maxPromise())
		}
	}
}

// observe records a term seen in any message. A leader that learns of a
// higher term is no longer the newest leader: it steps down and, being
// still alive, campaigns for a term above it.
func (m *Machine) observe(now time.Time, t uint64) {
	if t <= m.term {
		return
	}
	m.term = t
	if m.leading {
		m.stepDown("higher term seen")
		m.campaign(now)
	}
}

// claim handles "L leads term t" (heartbeat or bully coordinator).
func (m *Machine) claim(now time.Time, l node.ID, t uint64) {
	if l == m.cfg.ID {
		return // an echo of our own leadership
	}
	if t < m.term || (t == m.term && m.leading) {
		// A stale leader: tell it, so it steps down (or re-runs and
		// wins a newer term, if it deserves to).
		m.send(l, Msg{Type: MsgStale, Term: m.term})
		return
	}
	if m.leading {
		m.stepDown("higher term seen")
	}
	m.term = t
	m.hb.Heard(l, now)
	m.starved = 0
	if l != m.leader || t != m.leaderTerm {
		m.adopt(l, t)
	} else if m.electing && m.better(l, m.cfg.ID) {
		// A re-run election (for example one a lower process's request
		// triggered) ends when the known leader reasserts itself.
		m.endElection()
	}
	if m.better(m.cfg.ID, l) && !m.electing {
		// Tanenbaum ch. 6: the biggest process always wins, so a process that
		// outranks the leader (it recovered, or was missed) takes over.
		m.campaign(now)
	}
}

func (m *Machine) adopt(l node.ID, t uint64) {
	m.leader, m.leaderTerm = l, t
	m.leaderStretch = 0
	m.endElection()
	m.settledClaims(t)
	m.events = append(m.events, LeaderEvent{Event: "leader", Leader: l, Term: t, Self: l == m.cfg.ID})
}

func (m *Machine) endElection() {
	m.electing, m.answered, m.participant = false, false, false
	m.answerBy, m.coordBy, m.electAt, m.joinUntil = time.Time{}, time.Time{}, time.Time{}, time.Time{}
}

func (m *Machine) stepDown(reason string) {
	m.leaseLost(reason)
	m.leading = false
	m.nextBeat = time.Time{}
	m.events = append(m.events, StepDownEvent{Event: "stepdown", Term: m.leaderTerm, Reason: reason})
}

// lostLeader: the leader is gone (suspected or resigned).
func (m *Machine) lostLeader(now time.Time) {
	if m.leader != node.None {
		m.down[m.leader] = now
		m.hb.Forget(m.leader)
	}
	m.leader = node.None
	m.starved = 0
	m.algo.leaderLost(now)
}

// become makes this process the leader of the smallest owned term above
// everything seen.
func (m *Machine) become(now time.Time) {
	t := m.ownedTerm(m.cfg.ID, m.term)
	m.term = t
	m.leading = true
	m.adopt(m.cfg.ID, t)
	m.nextBeat = now.Add(m.cfg.Heartbeat)
	if m.cfg.Lease > 0 {
		m.leaseReset()
		m.nextBeat = now // acknowledgements start the lease: ask at once
	}
}

func (m *Machine) campaign(now time.Time) {
	m.electing = true
	m.answered = false
	m.coordBy = now.Add(m.cfg.Timeout + m.cfg.AnswerTimeout*time.Duration(len(m.peers)))
	m.algo.initiate(now)
}

// Tick implements node.Machine.
func (m *Machine) Tick(now time.Time) {
	m.awake(now)
	m.start(now)
	if m.retired {
		return
	}
	m.leaseTick(now)
	if m.leading && !m.nextBeat.After(now) {
		var seq uint64
		var k uint8
		if m.cfg.Lease > 0 {
			seq, k = m.leaseBeat(now)
		} else if m.health.Max > 0 {
			// Without leases too, a heartbeat says how long the leader's
			// own health asks its followers to wait (doc.go "Local health").
			k = m.stretchNow(now)
		}
		for _, p := range m.peers {
			if p != m.cfg.ID {
				m.send(p, Msg{Type: MsgHeartbeat, Leader: m.cfg.ID, Term: m.leaderTerm, Round: seq, Stretch: k})
			}
		}
		m.nextBeat = now.Add(m.cfg.Heartbeat)
	}
	// Silence counts only while this process ran (doc.go "Local health").
	if !m.leading && m.leader != node.None && m.hb.Suspected(m.leader, now.Add(-m.starved)) {
		m.lostLeader(now)
	}
	if !m.joinUntil.IsZero() && !m.joinUntil.After(now) {
		m.joinUntil = time.Time{}
		if m.leader == node.None && !m.electing {
			m.campaign(now)
		}
	}
	if !m.electAt.IsZero() && !m.electAt.After(now) {
		m.electAt = time.Time{}
		if m.leader == node.None {
			m.campaign(now)
		}
	}
	if !m.answerBy.IsZero() && !m.answerBy.After(now) {
		m.answerBy = time.Time{}
		m.algo.answersDue(now)
	}
	if !m.coordBy.IsZero() && !m.coordBy.After(now) {
		m.coordBy = time.Time{}
		if m.electing || m.leader == node.None {
			m.restarts++
			m.campaign(now) // the winner never announced itself: start again
		}
	}
	m.retryHops(now)
	m.backupTick(now)
	for k, t := range m.seen {
		if now.Sub(t) > 10*m.cfg.Timeout {
			delete(m.seen, k)
		}
	}
}

// Ready implements node.Machine.
func (m *Machine) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: m.out, Events: m.events}
	m.out, m.events = nil, nil
	if m.retired {
		m.wantWake = time.Time{}
		return r
	}
	defer func() { m.wantWake = r.Wake }()
	wake := func(t time.Time) {
		if !t.IsZero() && (r.Wake.IsZero() || t.Before(r.Wake)) {
			r.Wake = t
		}
	}
	wake(m.nextBeat)
	wake(m.joinUntil)
	wake(m.electAt)
	wake(m.answerBy)
	wake(m.coordBy)
	if m.lease.held {
		wake(m.lease.end)
	}
	if !m.leading && m.leader != node.None {
		if d := m.hb.Deadline(m.leader); !d.IsZero() {
			wake(d.Add(m.starved))
		}
		if m.health.Max > 0 {
			// A follower runs at least once every half Timeout, so
			// that the lateness of its own wake-ups measures how long
			// it was not scheduled (doc.go "Local health"). The
			// leader's heartbeats usually come first.
			wake(m.lastNow.Add(m.cfg.Timeout / 2))
		}
	}
	for _, h := range m.hops {
		wake(h.deadline)
	}
	wake(m.backupWake())
	return r
}
