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

	// naiveTerms plants a bug for the checkers to catch: winners take
	// term+1 instead of an owned term. Tests only.
	naiveTerms bool
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{Algo: Bully, Heartbeat: 50 * time.Millisecond, Timeout: 200 * time.Millisecond,
		AnswerTimeout: 50 * time.Millisecond}
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

	hb   *fd.Timeout           // silence from the leader
	down map[node.ID]time.Time // peers believed down (did not answer), when marked

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
	for i, p := range peers {
		m.index[p] = i
		m.prio[p] = uint64(p)
	}
	m.prio[cfg.ID] = cfg.Priority
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
	return map[string]any{"id": m.cfg.ID, "algo": m.cfg.Algo.String(), "leader": m.leader,
		"term": m.leaderTerm, "max_term": m.term, "state": state, "priority": m.cfg.Priority}
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

func (m *Machine) isDown(id node.ID, now time.Time) bool {
	t, ok := m.down[id]
	return ok && now.Sub(t) < downFor*m.cfg.Timeout
}

// Step implements node.Machine.
func (m *Machine) Step(now time.Time, in node.Envelope[Msg]) error {
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
	if m.retired {
		return nil
	}
	switch msg.Type {
	case MsgHeartbeat:
		m.claim(now, msg.Leader, msg.Term)
	case MsgElection:
		m.observe(now, msg.Term)
		switch m.cfg.Algo {
		case Bully:
			m.bullyElection(now, in.From)
		case Ring:
			m.ringElection(now, in.From, msg)
		case ChangRoberts:
			m.crElection(now, in.From, msg)
		}
	case MsgAnswer:
		m.observe(now, msg.Term)
		if m.electing && m.cfg.Algo == Bully {
			// Seed 001: a reply means a higher process is alive; wait
			// for its coordinator message.
			m.answered = true
			m.answerBy = time.Time{}
			m.coordBy = now.Add(m.cfg.CoordinatorTimeout)
		}
	case MsgCoordinator:
		if m.cfg.Algo == Bully {
			m.claim(now, msg.Leader, msg.Term)
		} else {
			m.ringCoordinator(now, in.From, msg)
		}
	case MsgAck:
		k := ringKey{msg.Of, msg.Origin, msg.Round}
		if h := m.hops[k]; h != nil && h.to == in.From {
			delete(m.hops, k)
		}
	case MsgStale:
		m.observe(now, msg.Term)
	case MsgResign:
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
	if l != m.leader || t != m.leaderTerm {
		m.adopt(l, t)
	} else if m.electing && m.better(l, m.cfg.ID) {
		// A re-run election (for example one a lower process's request
		// triggered) ends when the known leader reasserts itself.
		m.endElection()
	}
	if m.better(m.cfg.ID, l) && !m.electing {
		// Seed 002: the biggest process always wins, so a process that
		// outranks the leader (it recovered, or was missed) takes over.
		m.campaign(now)
	}
}

func (m *Machine) adopt(l node.ID, t uint64) {
	m.leader, m.leaderTerm = l, t
	m.endElection()
	m.events = append(m.events, LeaderEvent{Event: "leader", Leader: l, Term: t, Self: l == m.cfg.ID})
}

func (m *Machine) endElection() {
	m.electing, m.answered, m.participant = false, false, false
	m.answerBy, m.coordBy, m.electAt, m.joinUntil = time.Time{}, time.Time{}, time.Time{}, time.Time{}
}

func (m *Machine) stepDown(reason string) {
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
	if m.cfg.Algo == Bully {
		m.campaign(now)
		return
	}
	// Ring initiations are jittered so that, when every process notices
	// at once, one circulation usually starts first and the others join it.
	m.electAt = now.Add(time.Duration(m.cfg.Rand.Int64N(int64(m.cfg.Heartbeat) + 1)))
}

// become makes this process the leader of the smallest owned term above
// everything seen.
func (m *Machine) become(now time.Time) {
	t := m.ownedTerm(m.cfg.ID, m.term)
	m.term = t
	m.leading = true
	m.adopt(m.cfg.ID, t)
	m.nextBeat = now.Add(m.cfg.Heartbeat)
}

func (m *Machine) campaign(now time.Time) {
	m.electing = true
	m.answered = false
	m.coordBy = now.Add(m.cfg.Timeout + m.cfg.AnswerTimeout*time.Duration(len(m.peers)))
	switch m.cfg.Algo {
	case Bully:
		m.bullyStart(now)
	case Ring:
		m.round++
		m.ringSend(now, Msg{Type: MsgElection, Origin: m.cfg.ID, Round: m.round, Term: m.term,
			Members: []Member{{m.cfg.ID, m.cfg.Priority}}})
	case ChangRoberts:
		m.round++
		m.participant = true
		m.ringSend(now, Msg{Type: MsgElection, Origin: m.cfg.ID, Round: m.round, Term: m.term,
			Leader: m.cfg.ID, Members: []Member{{m.cfg.ID, m.cfg.Priority}}})
	}
}

// --- bully (Schaffernicht, Topic V "Bully algorithm", Tanenbaum §6.5 "Election by bullying")

func (m *Machine) bullyStart(now time.Time) {
	m.targets = m.targets[:0]
	for _, p := range m.peers {
		if p != m.cfg.ID && m.better(p, m.cfg.ID) && !m.isDown(p, now) {
			m.targets = append(m.targets, p)
		}
	}
	if len(m.targets) == 0 {
		m.bullyWin(now)
		return
	}
	for _, p := range m.targets {
		m.send(p, Msg{Type: MsgElection})
	}
	m.answerBy = now.Add(m.cfg.AnswerTimeout)
}

// bullyWin: no higher process answered; announce victory to everyone not
// known to be down (Nita-Rotaru, 7610: the second-highest detecting the failure
// needs only n−2 messages).
func (m *Machine) bullyWin(now time.Time) {
	m.become(now)
	for _, p := range m.peers {
		if p != m.cfg.ID && !m.isDown(p, now) {
			m.send(p, Msg{Type: MsgCoordinator, Leader: m.cfg.ID, Term: m.leaderTerm})
		}
	}
}

func (m *Machine) bullyElection(now time.Time, from node.ID) {
	if !m.better(m.cfg.ID, from) {
		return // only lower processes ask us
	}
	m.send(from, Msg{Type: MsgAnswer})
	switch {
	case m.leading:
		// Already the leader: tell the asker at once instead of
		// starting an election that would only bump the term.
		m.send(from, Msg{Type: MsgCoordinator, Leader: m.cfg.ID, Term: m.leaderTerm})
	case !m.electing:
		m.campaign(now) // Schaffernicht, Topic V: "starts an election on its own"
	}
}

// --- ring (Tanenbaum ch. 6 "Election in a ring", Nita-Rotaru, 7610 "Ring algorithm")

// successor is the next process after from in ring order that is not
// believed down, or self when every other process is.
func (m *Machine) successor(now time.Time, after node.ID) node.ID {
	i := m.index[after]
	for k := 1; k <= len(m.peers); k++ {
		p := m.peers[(i+k)%len(m.peers)]
		if p == m.cfg.ID || !m.isDown(p, now) {
			return p
		}
	}
	return m.cfg.ID
}

// ringSend forwards a ring message to the next live successor and waits
// for its acknowledgement.
func (m *Machine) ringSend(now time.Time, msg Msg) {
	m.ringSendAfter(now, msg, m.cfg.ID)
}

func (m *Machine) ringSendAfter(now time.Time, msg Msg, after node.ID) {
	to := m.successor(now, after)
	k := ringKey{msg.Type, msg.Origin, msg.Round}
	if to == m.cfg.ID {
		// Every other process is down: the message comes straight back.
		delete(m.hops, k)
		m.seen[k] = now
		m.ringArrive(now, msg)
		return
	}
	m.seen[k] = now
	m.hops[k] = &hop{msg: msg, to: to, deadline: now.Add(m.cfg.AnswerTimeout)}
	m.send(to, msg)
}

func (m *Machine) ack(to node.ID, msg Msg) {
	m.send(to, Msg{Type: MsgAck, Of: msg.Type, Origin: msg.Origin, Round: msg.Round})
}

// firstSight acknowledges a ring message and reports whether it is new.
// A message of our own that completed its circulation is handed to
// ringArrive (which ignores stale or repeated returns) and reported as not new.
func (m *Machine) firstSight(now time.Time, from node.ID, msg Msg) bool {
	m.ack(from, msg)
	if msg.Origin == m.cfg.ID {
		m.ringArrive(now, msg)
		return false
	}
	k := ringKey{msg.Type, msg.Origin, msg.Round}
	if _, dup := m.seen[k]; dup {
		return false
	}
	m.seen[k] = now
	return true
}

// ringArrive handles a ring message that completed its circulation.
func (m *Machine) ringArrive(now time.Time, msg Msg) {
	if msg.Origin != m.cfg.ID {
		return // the origin is down: let its circulation die
	}
	switch msg.Type {
	case MsgElection:
		if msg.Round != m.round || !m.electing {
			return // an older or repeated circulation of ours
		}
		if m.cfg.Algo == ChangRoberts {
			m.crWin(now) // our own candidacy came all the way round
			return
		}
		// Back at the initiator: the highest-priority member leads the
		// new ring, at a term that member owns (Nita-Rotaru, 7610: "Sends a LEADER
		// message that announces the new leader ... List of the members").
		best := msg.Members[0]
		for _, mb := range msg.Members[1:] {
			m.prio[mb.ID] = mb.Prio
			if mb.Prio > best.Prio || mb.Prio == best.Prio && mb.ID > best.ID {
				best = mb
			}
		}
		t := m.ownedTerm(best.ID, max(m.term, msg.Term))
		coord := Msg{Type: MsgCoordinator, Origin: m.cfg.ID, Round: m.round, Leader: best.ID, Term: t, Members: msg.Members}
		m.applyCoordinator(now, coord)
		m.ringSend(now, coord)
	case MsgCoordinator:
		// Seed 004: when the LEADER message returns, the election is over.
	}
}

func (m *Machine) ringElection(now time.Time, from node.ID, msg Msg) {
	if !m.firstSight(now, from, msg) || len(msg.Members) == 0 {
		return
	}
	// Every member listed added itself moments ago: fresh evidence that
	// it is alive, so it is no longer skipped as a successor.
	for _, mb := range msg.Members {
		delete(m.down, mb.ID)
	}
	if !slices.ContainsFunc(msg.Members, func(mb Member) bool { return mb.ID == m.cfg.ID }) {
		msg.Members = append(slices.Clone(msg.Members), Member{m.cfg.ID, m.cfg.Priority})
	}
	msg.Term = max(msg.Term, m.term)
	// Taking part in someone else's election stands in for starting our own.
	m.electAt = time.Time{}
	m.ringSend(now, msg)
}

func (m *Machine) ringCoordinator(now time.Time, from node.ID, msg Msg) {
	if !m.firstSight(now, from, msg) {
		return
	}
	m.applyCoordinator(now, msg)
	m.ringSend(now, msg)
}

// applyCoordinator installs the leader a ring coordinator message names.
func (m *Machine) applyCoordinator(now time.Time, msg Msg) {
	for _, mb := range msg.Members {
		m.prio[mb.ID] = mb.Prio
	}
	if msg.Leader == m.cfg.ID {
		if msg.Term > m.term || (msg.Term == m.term && !m.leading) {
			m.term = msg.Term
			m.leading = true
			m.adopt(m.cfg.ID, msg.Term)
			m.nextBeat = now
		}
		return
	}
	m.claim(now, msg.Leader, msg.Term)
}

// --- Chang–Roberts (Schaffernicht, Topic V "Chang's Ring algorithm")

func (m *Machine) crElection(now time.Time, from node.ID, msg Msg) {
	if !m.firstSight(now, from, msg) || len(msg.Members) != 1 {
		return
	}
	cand := msg.Members[0]
	m.prio[cand.ID] = cand.Prio
	delete(m.down, cand.ID) // the candidate was alive when it sent this
	m.electAt = time.Time{}
	switch {
	case m.leading && m.better(m.cfg.ID, cand.ID):
		// A live leader outranks the candidate: assert leadership to it
		// rather than start a round that would only bump the term.
		m.send(cand.ID, Msg{Type: MsgHeartbeat, Leader: m.cfg.ID, Term: m.leaderTerm})
	case m.better(cand.ID, m.cfg.ID):
		// Pass the better candidate on. A follower now waits for the
		// outcome and runs again if the candidacy dies with its owner; a
		// leader keeps leading until the better process announces itself.
		m.participant = true
		if !m.leading {
			m.electing = true
			m.coordBy = now.Add(m.cfg.Timeout + m.cfg.AnswerTimeout*time.Duration(len(m.peers)))
		}
		m.ringSend(now, msg)
	case !m.participant || !m.electing:
		// Replace the weaker candidate by ourselves (Schaffernicht, Topic V:
		// elect(max(i, j))).
		m.campaign(now)
	default:
		// Already carrying a candidacy at least as good: swallow the
		// weaker one (Chang–Roberts).
	}
}

func (m *Machine) crWin(now time.Time) {
	t := m.ownedTerm(m.cfg.ID, m.term)
	coord := Msg{Type: MsgCoordinator, Origin: m.cfg.ID, Round: m.round, Leader: m.cfg.ID, Term: t,
		Members: []Member{{m.cfg.ID, m.cfg.Priority}}}
	m.applyCoordinator(now, coord)
	m.ringSend(now, coord)
}

// Tick implements node.Machine.
func (m *Machine) Tick(now time.Time) {
	m.start(now)
	if m.retired {
		return
	}
	if m.leading && !m.nextBeat.After(now) {
		for _, p := range m.peers {
			if p != m.cfg.ID {
				m.send(p, Msg{Type: MsgHeartbeat, Leader: m.cfg.ID, Term: m.leaderTerm})
			}
		}
		m.nextBeat = now.Add(m.cfg.Heartbeat)
	}
	if !m.leading && m.leader != node.None && m.hb.Suspected(m.leader, now) {
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
		// Nobody higher answered within 2·MDT + MHT: they are down.
		m.answerBy = time.Time{}
		for _, p := range m.targets {
			m.down[p] = now
		}
		if m.electing && !m.answered {
			m.bullyWin(now)
		}
	}
	if !m.coordBy.IsZero() && !m.coordBy.After(now) {
		m.coordBy = time.Time{}
		if m.electing || m.leader == node.None {
			m.campaign(now) // the winner never announced itself: start again
		}
	}
	m.retryHops(now)
	for k, t := range m.seen {
		if now.Sub(t) > 10*m.cfg.Timeout {
			delete(m.seen, k)
		}
	}
}

// retryHops skips successors that did not acknowledge a ring message.
func (m *Machine) retryHops(now time.Time) {
	var due []ringKey
	for k, h := range m.hops {
		if !h.deadline.After(now) {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b ringKey) int {
		if c := int(a.typ) - int(b.typ); c != 0 {
			return c
		}
		if a.origin != b.origin {
			return int(a.origin) - int(b.origin)
		}
		if a.round < b.round {
			return -1
		}
		if a.round > b.round {
			return 1
		}
		return 0
	})
	for _, k := range due {
		h := m.hops[k]
		delete(m.hops, k)
		m.down[h.to] = now
		m.ringSendAfter(now, h.msg, h.to)
	}
}

// Ready implements node.Machine.
func (m *Machine) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: m.out, Events: m.events}
	m.out, m.events = nil, nil
	if m.retired {
		return r
	}
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
	if !m.leading && m.leader != node.None {
		wake(m.hb.Deadline(m.leader))
	}
	for _, h := range m.hops {
		wake(h.deadline)
	}
	return r
}
