package ticket

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Config configures a Machine.
type Config struct {
	ID node.ID
	// Tickets is the pool size n for the process that founds the pool
	// (it owns ticket n−1 and coordinates all others); 0 for a joiner.
	Tickets int
	// Contacts are processes a joiner may ask first.
	Contacts []node.ID
	// Retry is how often an unanswered request is sent again, and the
	// base of a rejected joiner's backoff. Default 50ms.
	Retry time.Duration
	// Rand chooses tickets, coordinators and backoffs. Required.
	Rand *rand.Rand

	// FaultTolerant runs §4 (rounds.go, exclude.go): ALIVE and UPDATE
	// rounds, support, weak failure detection and exclusion. Without it
	// the machine is §3's: a crashed process keeps its range for good.
	FaultTolerant bool
	// §4. K: a member stays in the core while at least half of its 2k+1
	// closest predecessors vouch for it (support, rounds.go). Default 1.
	K int
	// Round is the period of ALIVE and UPDATE messages. Default 100ms.
	Round time.Duration
	// Delta (δ) is how long a request waits for its answer before the
	// receiver is weakly detected as faulty. Default Round/2.
	Delta time.Duration
	// Suspect is how many rounds without an ACKUPDATE from the successor
	// weakly detect it as faulty. Default 3.
	Suspect int
	// Window is how many rounds one ALIVE vouches for. Default 3.
	Window int
	// Drift bounds the rate difference of any two clocks. Default 0.01.
	Drift float64
	// Margin is added to a temporary coordinator's wait before it hands
	// out the excluded tickets: the time a host needs to stop what an
	// excluded member was running (the kill grace of ticketd run).
	Margin time.Duration
	// Stretch bounds the local-health factor (rounds.go, "Busy hosts" in
	// doc.go): a process whose own rounds run late counts each ALIVE as
	// vouching for up to Stretch windows, and suspects its successor only
	// after up to Stretch times Suspect rounds. Every wait on the safety
	// side (a voter's ban, a temporary coordinator's wait) assumes the
	// full Stretch windows, so it must be the same on every member, as
	// Round and Window are. Default 1: no stretch.
	Stretch int
	// Grant, if above Stretch, lets a process whose own rounds run late
	// vouch for up to Grant windows with its ALIVEs and UPDATEs (the
	// stretch their sender grants; a receiver's own factor still counts
	// up to Stretch only). A voter reports the longest it granted in its
	// ACKCOORD and the excluder waits it out (doc.go, "Busy hosts: a
	// stall of the whole host"). Same on every member. Default Stretch.
	Grant int

	// Floor is the highest epoch this process's member knows of from
	// earlier lives (earlier Machines of the member, a state file, other
	// members' answers): the mark starts there and travels in every
	// message sent, and a founder's tickets start above it, so fencing
	// numbers grow across restarts and refounds (doc.go, "Fencing").
	Floor uint64

	// Phases emits ExcludingEvent and TemporaryEvent, with which the
	// simulator times the phases of a reclaim and the daemon logs them.
	Phases bool

	// Quorum: a refound needs only a majority of the book's members, and
	// a member's processes lend only while the member holds a lease from
	// a majority: the first process holds it, the others are told its
	// end (MsgLeased; lease.go; doc.go, "A refound that needs a
	// majority"). Without it a refound needs an answer from every member.
	// ticketd sets it.
	Quorum bool

	// bug plants a bug for the checkers. Tests only.
	bug bug
}

type bug uint8

const (
	bugCleaveFromAnyone bug = 1 + iota // serve a CLEAVE from a process that is not the successor
	bugKeepSucc                        // grant a ticket but keep the old successor (Algorithm 1 without ImmedSucc_p = q)
	bugServeWhileTemp                  // serve CJOIN while a temporary coordinator (§4)
	bugNoBan                           // acknowledge an exclusion but keep vouching for E_pq
	bugShortTemp                       // hand out excluded tickets after one round
	bugFloorZero                       // a new Machine forgets its member's mark (Config.Floor): a refounded pool starts from 0
	bugRefoundSilent                   // a Member founds the pool again although members did not answer its probe
	bugNoStretchWait                   // stretch support by local health but wait out only one window (Config.Stretch)
	bugNoHandL                         // a leaving process hands its successor no L (MsgHandL)
)

type state uint8

const (
	stIdle        state = iota // not asked to join
	stJoining                  // CJOIN outstanding
	stLinking                  // ticket granted; NEWSUCC outstanding (may not act)
	stCoordinator              // owns its ticket and may act
	stLeaving                  // CLEAVE outstanding; acts no more
	stLeft
	stExcluded // lost its support (§4): acts no more, must join again
)

var stateNames = [...]string{"idle", "joining", "linking", "coordinator", "leaving", "left", "excluded"}

func (s state) String() string { return stateNames[s] }

// answer is a coordinator's final answer to one CJOIN attempt, replayed to
// duplicates.
type answer struct {
	attempt uint64
	reply   Msg
	at      time.Time
}

// cleft names one incarnation of a process that left: its ID and the
// CJOIN attempt that placed it (attempts only grow per ID).
type cleft struct {
	id      node.ID
	attempt uint64
}

// forget is how long a coordinator replays an answer; a duplicate delayed
// longer than this is outside the fault model.
const forget = time.Minute

// Machine is one process of the pool (§3: Algorithms 1 and 2). Create it
// with New; the runner calls Tick once at start.
type Machine struct {
	cfg Config
	st  state
	n   uint32

	ticket     uint32 // owned
	epoch      uint64 // the owned ticket's epoch
	succ       node.ID
	succTicket uint32
	pred       node.ID
	view       map[uint32]node.ID // Cview: ticket → owner, as far as known
	epochs     map[uint32]uint64  // last epoch of each ticket in S_p

	// joiner
	attempt    uint64
	target     node.ID
	want       uint32
	joinAt     time.Time             // send (or resend) the CJOIN then
	joinSent   time.Time             // the last CJOIN went out then, unanswered (zero: answered)
	joinLost   bool                  // the CJOIN before it had no answer either
	succAt     time.Time             // resend NEWSUCC then (awaitSucc)
	leaveAt    time.Time             // resend CLEAVE then (stLeaving)
	await      bool                  // NEWSUCC sent to succ, not acknowledged
	leaveReq   bool                  // leave once linked
	leaveCheck *leaveCheck           // a leave waiting for its neighbours' answers (confirm.go)
	tried      map[node.ID]time.Time // joiner: who rejected us lately
	hinted     node.ID               // joiner: a coordinator said it has a free ticket (hint.go)
	waiting    map[node.ID]time.Time // coordinator: joiners rejected lately, told when a ticket frees (hint.go)
	refused    refusedUpdate         // the last UPDATE refused for another's claim (dropClaim)
	silent     int                   // joiner: CJOINs to the target unanswered
	leftEpochs []Epoch               // leaving: the epochs of the range handed back
	handUntil  time.Time             // left: resend MsgHandL until then (handL)

	// coordinator memory
	answered map[node.ID]answer
	cleaved  map[cleft]time.Time // former successors whose CLEAVE we acknowledged
	lastPred node.ID             // left: who let us go
	lastSucc node.ID             // left: our successor then

	// §4 (rounds.go, exclude.go)
	preds      []Owner             // L_p, closest first
	predsFull  bool                // L_p holds 2k+1, or the whole ring: it came round
	succs      []Owner             // the 2k+1 closest successors, closest first
	known      map[node.ID]known   // successors heard of lately
	former     map[node.ID]known   // successors a join pushed out of the 2k+1, until when
	claims     map[node.ID]known   // processes that named us their successor lately
	handed     map[node.ID]known   // leavers that handed us their L lately (claim)
	sentRs     [][]Owner           // R_p as the successor may hold it: the last R it acknowledged and every R sent since
	pendR      []Owner             // the UPDATE in flight
	alive      map[Owner]time.Time // when each place's last vouch arrived (rounds.go, vouch)
	graceUntil time.Time           // a newcomer acts without support until then
	roundAt    time.Time           // next round
	lastAck    time.Time           // last ACKUPDATE from the successor (or its NEWSUCC, for suspicion)
	lastNews   time.Time           // last ACKUPDATE from any successor: known successors age against it
	succAcked  bool                // the successor has acknowledged an UPDATE since it became ours
	floor      uint64              // highest epoch heard of
	ex         *exclusion
	temp       *temporary
	bans       []ban
	speaks     []spoken   // places taken with a CLEAVE, vouched for (speak.go)
	oldPlaces  []oldPlace // places this member's earlier processes held, answered for (speak.go)
	cleaveTo   []node.ID  // leaving: every process our CLEAVE went to
	exID       uint64
	updSeq     uint64  // numbers UPDATEs, so that only the answer to the last one counts as its status
	updIn      updSeen // the last UPDATE taken: an older one arriving late is dropped (onUpdate)
	updAt      time.Time
	updAcked   bool
	counts     Counts
	health     health             // local health: how late this process's own rounds run (rounds.go)
	aliveBy    map[Owner]uint8    // the local-health factor of each last vouch's sender, by place (0: a credit)
	succHealth uint8              // the successor's factor, from its last ACKUPDATE
	held       held               // how vouches read after a stall are dated (held.go)
	echo       map[node.ID]uint64 // the latest stamp heard from each successor, echoed in our vouches (echo.go)
	now        time.Time          // the current Step or Tick's time, for stamps

	out    []node.Envelope[Msg]
	events []node.Event
}

// New returns a Machine.
func New(cfg Config) (*Machine, error) {
	if cfg.ID == node.None {
		return nil, errors.New("ticket: ID must not be 0")
	}
	if cfg.Rand == nil {
		return nil, errors.New("ticket: Config.Rand is required")
	}
	if cfg.Tickets < 0 || cfg.Tickets > MaxTickets {
		return nil, fmt.Errorf("ticket: pool of %d tickets (want 1 to %d)", cfg.Tickets, MaxTickets)
	}
	if cfg.Tickets == 0 && len(cfg.Contacts) == 0 {
		return nil, errors.New("ticket: a joiner needs contacts")
	}
	if cfg.Retry <= 0 {
		cfg.Retry = 50 * time.Millisecond
	}
	if cfg.K < 0 || 2*cfg.K+1 > MaxList {
		return nil, fmt.Errorf("ticket: k = %d (want 0 to %d)", cfg.K, (MaxList-1)/2)
	}
	if cfg.K == 0 {
		cfg.K = 1
	}
	if cfg.Round <= 0 {
		cfg.Round = 100 * time.Millisecond
	}
	if cfg.Delta <= 0 {
		cfg.Delta = cfg.Round / 2
	}
	if cfg.Suspect <= 0 {
		cfg.Suspect = 3
	}
	if cfg.Window <= 0 {
		cfg.Window = 3
	}
	if cfg.Stretch <= 0 {
		cfg.Stretch = 1
	}
	if cfg.Stretch > maxStretch {
		return nil, fmt.Errorf("ticket: stretch %d (want 1 to %d)", cfg.Stretch, maxStretch)
	}
	if cfg.Grant > maxStretch {
		return nil, fmt.Errorf("ticket: grant %d (want up to %d)", cfg.Grant, maxStretch)
	}
	if cfg.Drift <= 0 {
		cfg.Drift = 0.01
	}
	floor := cfg.Floor
	if cfg.bug == bugFloorZero {
		floor = 0
	}
	return &Machine{cfg: cfg, floor: floor, view: map[uint32]node.ID{}, epochs: map[uint32]uint64{}, alive: map[Owner]time.Time{}, known: map[node.ID]known{}, former: map[node.ID]known{}, claims: map[node.ID]known{},
		answered: map[node.ID]answer{}, cleaved: map[cleft]time.Time{}, tried: map[node.ID]time.Time{},
		waiting: map[node.ID]time.Time{},
		attempt: cfg.Rand.Uint64() >> 44}, nil
}

// Ticket returns the owned ticket and its epoch, and whether this process
// may act on it (it is a coordinator).
func (m *Machine) Ticket() (uint32, uint64, bool) {
	return m.ticket, m.epoch, m.st == stCoordinator
}

// Lend starts a new use of the owned ticket: ticketd lends one ticket to
// one local command after another, and each must get a fencing number
// above the last one's, so the ticket's epoch grows by one. It reports
// false unless the process may act at now.
func (m *Machine) Lend(now time.Time) (epoch uint64, ok bool) {
	if m.st != stCoordinator || !m.supported(now) {
		return 0, false
	}
	m.cancelLeave()
	m.epochs[m.ticket]++
	m.epoch = m.epochs[m.ticket]
	m.noteEpoch(m.epoch)
	return m.epoch, true
}

// Learn raises this process's mark (the highest epoch it has heard of)
// to floor: its member heard of it outside the ring, from a refound probe
// or an answer to one. The mark travels on in every message sent.
func (m *Machine) Learn(floor uint64) { m.noteEpoch(min(floor, maxEpoch)) }

// State names the process's state: idle, joining, linking, coordinator,
// leaving, left or excluded.
func (m *Machine) State() string { return m.st.String() }

// Done reports whether this process has left the core for good (it left
// or was excluded): to take part again, a new Machine joins.
func (m *Machine) Done() bool { return m.st == stLeft || m.st == stExcluded }

// Alone reports whether this process is the only one in the core.
func (m *Machine) Alone() bool { return m.inRing() && m.succ == m.cfg.ID }

// N is the pool's size (0 until known).
func (m *Machine) N() uint32 { return m.n }

// Floor is the highest epoch this process has heard of.
func (m *Machine) Floor() uint64 { return m.floor }

// size is |S_p|: own ticket and the free ones down to the successor's.
func (m *Machine) size() uint32 {
	if m.succ == m.cfg.ID {
		return m.n
	}
	return (m.ticket - m.succTicket + m.n) % m.n
}

// serving reports whether this process serves CJOINs at now: it owns a
// ticket, has support from ALIVEs (not a newcomer's grace), and no
// hand-over, exclusion or temporary coordinatorship is under way.
//
// A join shifts the 2k+1 windows around it, so the successor side must be
// in order too (doc.go, "Liveness"): the successor acknowledged an UPDATE
// within the last round and a half (a successor that failed unnoticed
// would leave the newcomer linking to a dead process), and it can hold
// only one L, our current R, acknowledged since it became our successor
// (before, its L came from its previous predecessor), which the newcomer
// takes as the successor's L should it have to exclude it.
func (m *Machine) serving(now time.Time) bool {
	if m.st != stCoordinator || m.await || m.temp != nil || m.ex != nil || !m.vouched(now) || !m.supported(now) {
		return false
	}
	if !m.cfg.FaultTolerant || m.succ == m.cfg.ID {
		return true
	}
	return m.succAcked && now.Sub(m.lastAck) < m.cfg.Round*3/2 && len(m.sentRs) == 1 && slices.Equal(m.sentRs[0], m.ownR())
}

// Free is how many tickets this process would hand a joiner at now: the
// free tickets of its range while it serves CJOINs, otherwise none.
func (m *Machine) Free(now time.Time) int {
	if !m.serving(now) {
		return 0
	}
	return int(m.size()) - 1
}

// Range returns S_p, own ticket first, when this process coordinates.
func (m *Machine) Range() []uint32 {
	if m.st != stLinking && m.st != stCoordinator {
		return nil
	}
	return m.span()
}

// span is S_p computed from the ticket and the successor.
func (m *Machine) span() []uint32 {
	out := make([]uint32, 0, m.size())
	for k := uint32(0); k < m.size(); k++ {
		out = append(out, (m.ticket-k+m.n)%m.n)
	}
	return out
}

func (m *Machine) inS(t uint32) bool { return t < m.n && (m.ticket-t+m.n)%m.n < m.size() }

// send queues msg for to. Every message carries the sender's mark (the
// highest epoch it has heard of): the mark spreads round the ring both
// ways each round (ALIVE forwards, ACKUPDATE backwards), so that no
// process, nor a refound (pkg/ticketd), depends on the one that issued an
// epoch to remember it.
func (m *Machine) send(to node.ID, msg Msg) {
	msg.Floor = max(msg.Floor, m.floor)
	msg.Stretch = m.health.factor()
	m.stamp(to, &msg)
	m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: to, Msg: msg})
}

func (m *Machine) viewList() []Owner {
	out := make([]Owner, 0, len(m.view))
	for t, id := range m.view {
		out = append(out, Owner{Ticket: t, ID: id})
	}
	slices.SortFunc(out, func(a, b Owner) int { return int(a.Ticket) - int(b.Ticket) })
	return out
}

// handOver lists the epochs of tickets this process stops coordinating,
// for the process taking them over, and forgets them.
func (m *Machine) handOver(tickets []uint32) []Epoch {
	var out []Epoch
	for _, t := range tickets {
		if e := m.epochs[t]; e > 0 {
			out = append(out, Epoch{Ticket: t, Epoch: e})
		}
		delete(m.epochs, t)
	}
	return out
}

// Step implements node.Machine.
func (m *Machine) Step(now time.Time, in node.Envelope[Msg]) error {
	msg := in.Msg
	m.noteRun(now)
	// Support first: a process that wakes from a pause may find the ALIVEs
	// of before the pause waiting in its socket, and must not take them as
	// fresh after it has lost its support (its range may be reclaimed).
	if !m.heldVouchBug(msg.Type) {
		m.checkSupport(now)
	}
	if in.From == m.cfg.ID {
		switch msg.Type {
		case MsgJoin:
			m.join(now)
		case MsgLeave:
			m.leave(now)
		default:
			return fmt.Errorf("ticket: %v is not a local request", msg.Type)
		}
		return nil
	}
	if m.n != 0 && msg.N != 0 && msg.N != m.n {
		return fmt.Errorf("ticket: %v from %d for a pool of %d tickets, this one has %d", msg.Type, in.From, msg.N, m.n)
	}
	m.noteEpoch(msg.Floor) // the sender's mark
	m.noteStamp(in.From, msg.Stamp)
	switch msg.Type {
	case MsgCJoin:
		m.onCJoin(now, in.From, msg)
	case MsgAckCJoin:
		m.onAckCJoin(now, in.From, msg)
	case MsgReject:
		m.onReject(now, in.From, msg)
	case MsgNewSucc:
		m.onNewSucc(now, in.From, msg)
	case MsgAckSucc:
		if m.await && in.From == m.succ {
			m.await, m.succAt = false, time.Time{}
			if m.st == stLinking {
				m.act(now)
			}
		} else if in.From == m.succ && m.cfg.FaultTolerant {
			m.resendUpdate(now)
		}
	case MsgCLeave:
		m.onCLeave(now, in.From, msg)
	case MsgAlive:
		m.onAlive(now, in.From, msg)
	case MsgUpdate:
		m.onUpdate(now, in.From, msg)
	case MsgAckUpdate:
		m.onAckUpdate(now, in.From, msg)
	case MsgExclude:
		m.onExclude(in.From, msg)
	case MsgAckExclude:
		m.onAckExclude(now, in.From, msg)
	case MsgReqCoord:
		m.onReqCoord(now, in.From, msg)
	case MsgAckCoord:
		m.onAckCoord(now, in.From, msg)
	case MsgIntro:
		m.onIntro(now, in.From, msg)
	case MsgHandL:
		m.onHandL(now, in.From, msg)
	case MsgPing:
		m.onPing(in.From, msg)
	case MsgPong:
		m.onPong(now, in.From, msg)
	case MsgFree:
		m.onFree(now, in.From, msg)
	case MsgAckCLeave:
		if m.st == stLeaving && in.From == m.pred {
			m.st, m.leaveAt, m.lastPred, m.lastSucc = stLeft, time.Time{}, in.From, m.succ
			m.events = append(m.events, LeftEvent{Event: "left"})
			// Our ALIVEs stop now: the successor must have our L before
			// the last of them runs out, over links that lose messages.
			m.handL()
			m.handUntil, m.leaveAt = now.Add(m.window()), now.Add(m.cfg.Retry)
		}
	default:
		return fmt.Errorf("ticket: unexpected %v from %d", msg.Type, in.From)
	}
	m.hintFree(now)
	return nil
}

// join founds the pool or starts asking for a ticket.
func (m *Machine) join(now time.Time) {
	if m.st != stIdle {
		return
	}
	if m.cfg.Tickets > 0 {
		// Bootstrap (a gap in the seed): the founder owns ticket n−1 and,
		// being its own successor, coordinates all n.
		m.n = uint32(m.cfg.Tickets)
		m.ticket, m.succ, m.succTicket, m.pred = m.n-1, m.cfg.ID, m.n-1, m.cfg.ID
		m.view[m.ticket] = m.cfg.ID
		m.epochs[m.ticket] = m.floor + 1
		m.floor++
		m.roundAt = now
		m.act(now)
		return
	}
	m.st = stJoining
	m.target = m.cfg.Contacts[m.cfg.Rand.IntN(len(m.cfg.Contacts))]
	m.want = NoTicket
	// Attempts only grow, also across restarts of a process that keeps
	// its ID (its clock moves on): a coordinator ignores attempts older
	// than one it answered. Milliseconds since 1970 times 2^20, plus a
	// random offset below 2^20 that keeps two starts in one millisecond apart.
	m.attempt = max(m.attempt+1, uint64(now.UnixMilli())<<20+m.attempt)
	m.joinAt = now
	m.sendJoin(now)
}

// joinSilence: with §4, a coordinator that does not answer a CJOIN for
// joinPatience sends may have crashed (its range waits for its exclusion):
// the joiner asks another contact, under a new attempt. Should the silent
// one answer the old attempt after all, its grant is ignored here, and the
// ring it placed us in excludes the place we never took (§3 alone has no
// such repair, so there the joiner keeps asking).
func (m *Machine) joinSilence() {
	if !m.cfg.FaultTolerant {
		return
	}
	if m.silent++; m.silent < joinPatience || len(m.cfg.Contacts) < 2 {
		return
	}
	m.silent = 0
	for {
		if c := m.cfg.Contacts[m.cfg.Rand.IntN(len(m.cfg.Contacts))]; c != m.target {
			m.target = c
			break
		}
	}
	m.attempt++
	m.want = NoTicket
}

// joinPatience is how many CJOINs go unanswered before the joiner asks
// elsewhere.
const joinPatience = 5

func (m *Machine) sendJoin(now time.Time) {
	m.send(m.target, Msg{Type: MsgCJoin, Attempt: m.attempt, Ticket: m.want})
	m.joinLost = !m.joinSent.IsZero()
	m.joinAt, m.joinSent = now.Add(m.cfg.Retry), now
}

// JoinInFlight reports whether a CJOIN of this joining process went out
// less than Retry ago and has had no answer: a grant may be on its way,
// and a refound probe's freeze now would drop the join it grants (the
// coordinator then holds a place for a joiner that moved on, until it
// excludes it). The Member waits for the answer before it probes. Only
// while the coordinators answer: a CJOIN sent after one that had no
// answer (a joiner cut off, or asking a dead contact) is not waited for,
// or a joiner resending every Retry would never probe.
func (m *Machine) JoinInFlight(now time.Time) bool { return now.Before(m.joinAnswerBy()) }

// joinAnswerBy is when an unanswered CJOIN stops counting as in flight
// (zero: none is).
func (m *Machine) joinAnswerBy() time.Time {
	if m.st != stJoining || m.joinSent.IsZero() || m.joinLost {
		return time.Time{}
	}
	return m.joinSent.Add(m.cfg.Retry)
}

// act: this process may now act on its ticket.
func (m *Machine) act(now time.Time) {
	m.st = stCoordinator
	m.epoch = m.epochs[m.ticket]
	m.events = append(m.events, TakenEvent{Event: "taken", Ticket: m.ticket, Epoch: m.epoch, N: m.n})
	if m.leaveReq {
		m.leave(now)
	}
}

// onCJoin: Algorithm 1, "Receiving a cjoin request". Requests are served
// one at a time, in arrival order (Lemma 3.2); the answer to an attempt is
// final and replayed to its duplicates, so a joiner that was rejected and
// moved on is never granted by a late copy.
func (m *Machine) onCJoin(now time.Time, from node.ID, msg Msg) {
	if a, ok := m.answered[from]; ok && now.Sub(a.at) < forget {
		switch {
		case msg.Attempt == a.attempt:
			m.send(from, a.reply)
			return
		case msg.Attempt < a.attempt:
			return // older than an attempt already answered
		}
	}
	if from == m.succ && m.succ != m.cfg.ID {
		// Our successor's ID asks to join: that process has restarted or
		// given up its place. Its old place must be excluded first (and
		// is, at once); granting now would make it its own successor.
		m.lastAck = time.Time{}
		reply := Msg{Type: MsgReject, Attempt: msg.Attempt, N: m.n, Succ: m.succ}
		m.send(from, reply)
		return
	}
	// Not while excluding either: E_pq includes our own free tickets, and a
	// newcomer placed there would be excluded with the rest.
	ready := m.serving(now) || m.cfg.bug == bugServeWhileTemp && m.st == stCoordinator && !m.await && m.vouched(now) && m.supported(now)
	if !ready || m.size() <= 1 {
		next, view := m.succ, m.viewList()
		if m.st == stLeft || m.st == stExcluded {
			next, view = m.lastSucc, nil // our view is history: follow the ring
		}
		reply := Msg{Type: MsgReject, Attempt: msg.Attempt, N: m.n, View: view, Succ: next}
		m.answered[from] = answer{attempt: msg.Attempt, reply: reply, at: now}
		m.send(from, reply)
		m.noteWaiting(now, from)
		return
	}
	// Choose t ∈ S_p \ {own ticket}: the one asked for if possible.
	t := msg.Ticket
	if t == m.ticket || !m.inS(t) {
		t = (m.ticket - 1 - uint32(m.cfg.Rand.IntN(int(m.size()-1))) + m.n) % m.n
	}
	// The joiner takes t down to our successor's ticket (exclusive); alone,
	// down to our own.
	stop := m.succTicket
	if m.succ == m.cfg.ID {
		stop = m.ticket
	}
	var given []uint32
	for k := uint32(0); k < (t-stop+m.n)%m.n; k++ {
		given = append(given, (t-k+m.n)%m.n)
	}
	m.epochs[t] = max(m.epochs[t]+1, m.floor+1) // handed out once more, above anything heard of
	m.noteEpoch(m.epochs[t])
	succ, succTicket := m.succ, stop
	m.view[t] = from
	// A copy: granting makes the joiner our successor, and recompute
	// rewrites m.succs in place before the reply is sent (the joiner
	// would learn itself and our old successor, nothing beyond: should
	// that successor be dead, it could never exclude it, exclude.go).
	succs := slices.Clone(m.succs)
	if m.cfg.bug == bugAliasSuccs {
		succs = m.succs
	}
	if succ == m.cfg.ID {
		succs = []Owner{{Ticket: m.ticket, ID: m.cfg.ID}}
	}
	// A new process at a place this process speaks for: it vouches for
	// itself from now on (and may be the same ID: speak.go).
	m.speaks = slices.DeleteFunc(m.speaks, func(s spoken) bool { return s.place.Ticket == t })
	reply := Msg{Type: MsgAckCJoin, Attempt: msg.Attempt, Ticket: t, Succ: succ, SuccTicket: succTicket, N: m.n,
		View: m.viewList(), Epochs: m.handOver(given), Preds: m.ownR(), Succs: succs, Floor: m.floor}
	if m.succ == m.cfg.ID && len(m.preds) == 0 {
		// Alone until now: our first predecessor will be the joiner, and
		// it vouches for us once it introduces itself (NEWSUCC); until
		// then we have a newcomer's grace.
		m.graceUntil = now.Add(m.grace())
	}
	if m.cfg.bug != bugKeepSucc {
		m.succ, m.succTicket = from, t
		m.newSucc(now, from, t)
		// The newcomer's L is the R it was granted until one of our
		// UPDATEs reaches it: an exclusion of it needs that list too.
		m.sentRs = [][]Owner{reply.Preds}
	}
	m.answered[from] = answer{attempt: msg.Attempt, reply: reply, at: now}
	m.send(from, reply)
}

// bugAliasSuccs: ACKCJOIN's successors share m.succs, which the grant
// rewrites before the reply goes out. Tests only.
const bugAliasSuccs bug = 152

// onAckCJoin: Algorithm 1, "Initialisation of variables when cjoin
// accepted".
func (m *Machine) onAckCJoin(now time.Time, from node.ID, msg Msg) {
	if m.st != stJoining || from != m.target || msg.Attempt != m.attempt || msg.N == 0 || msg.N > MaxTickets ||
		msg.Ticket >= msg.N || msg.SuccTicket >= msg.N {
		return
	}
	m.n, m.ticket, m.succ, m.succTicket, m.pred = msg.N, msg.Ticket, msg.Succ, msg.SuccTicket, from
	clear(m.view)
	for _, o := range msg.View {
		if o.Ticket < m.n {
			m.view[o.Ticket] = o.ID
		}
	}
	for _, e := range msg.Epochs {
		m.epochs[e.Ticket] = e.Epoch
		m.noteEpoch(e.Epoch)
	}
	m.noteEpoch(msg.Floor)
	// Algorithm 4, "Initialisation of variables when cjoin succeeds":
	// L from the coordinator, R empty; a grace period until the
	// predecessors have learnt of us (rounds.go).
	m.setPreds(msg.Preds)
	clear(m.known)
	for _, o := range msg.Succs {
		m.learn(now, o)
	}
	// The successor's L is the coordinator's R (it serves a CJOIN only
	// then): should the successor fail before it acknowledges us, our
	// exclusion of it needs a majority of that list (exclude.go).
	m.sentRs, m.pendR = [][]Owner{msg.Preds}, nil
	clear(m.alive)
	for _, o := range m.preds {
		if o.ID == from {
			m.alive[o] = now // the coordinator heads the R it sent
			break
		}
	}
	m.graceUntil = now.Add(m.grace())
	m.lastAck, m.roundAt, m.succAcked = now, now, false
	m.st, m.joinAt = stLinking, time.Time{}
	m.await = true
	m.send(m.succ, Msg{Type: MsgNewSucc, Ticket: m.ticket, SuccTicket: m.succTicket})
	m.succAt = now.Add(m.cfg.Retry)
}

// onReject: a coordinator refused (a joiner), or a CLEAVE went to a
// process that is not our predecessor (a leaver).
func (m *Machine) onReject(now time.Time, from node.ID, msg Msg) {
	switch {
	case m.st == stLeaving && from == m.pred && msg.Succ != node.None && msg.Succ != m.cfg.ID:
		m.pred = msg.Succ
		m.sendCleave(now)
	case m.st == stJoining && from == m.target && msg.Attempt == m.attempt:
		m.silent, m.joinSent, m.joinLost = 0, time.Time{}, false
		m.tried[from] = now
		if h := m.hinted; h != node.None && h != from {
			m.askHinted(now, h, NoTicket) // a coordinator with a free ticket, before the walk goes on
			return
		}
		m.hinted = node.None
		m.attempt++
		if m.pickTarget(from, msg) {
			m.joinAt = now // the next coordinator on the ring, at once
			m.sendJoin(now)
			return
		}
		// Round the ring (or nowhere to go): every coordinator is full or
		// busy. Start again after a backoff of one to two Retry periods.
		clear(m.tried)
		m.joinAt = now.Add(m.cfg.Retry + time.Duration(m.cfg.Rand.Int64N(int64(m.cfg.Retry))))
	}
}

// pickTarget chooses whom to ask after from rejected us, and reports
// whether that continues a walk (ask at once) or starts afresh (back off).
// First choice: from's successor, so that the walk visits every
// coordinator in ring order, which a view cannot promise (views are only as
// fresh as the last hand-over). When the walk comes back to a coordinator
// that rejected us, it starts again at the coordinator of a random free
// ticket in from's view (§3.1: the owner of the nearest owned ticket
// above it), or at a contact.
func (m *Machine) pickTarget(from node.ID, msg Msg) bool {
	if _, rejected := m.tried[msg.Succ]; msg.Succ != node.None && msg.Succ != m.cfg.ID && !rejected {
		m.target, m.want = msg.Succ, NoTicket
		return true
	}
	n := msg.N
	owner := map[uint32]node.ID{}
	for _, o := range msg.View {
		if o.Ticket < n {
			owner[o.Ticket] = o.ID
		}
	}
	if n > 0 && len(owner) > 0 && uint32(len(owner)) < n {
		var free []uint32
		for t := uint32(0); t < n; t++ {
			if _, ok := owner[t]; !ok {
				free = append(free, t)
			}
		}
		f := free[m.cfg.Rand.IntN(len(free))]
		for u := (f + 1) % n; ; u = (u + 1) % n {
			if id, ok := owner[u]; ok {
				if id != m.cfg.ID {
					m.target, m.want = id, f
					return false
				}
				break
			}
		}
	}
	ids := slices.Clone(m.cfg.Contacts)
	for _, o := range msg.View {
		if o.ID != m.cfg.ID {
			ids = append(ids, o.ID)
		}
	}
	m.target, m.want = ids[m.cfg.Rand.IntN(len(ids))], NoTicket
	return false
}

// onNewSucc: Algorithm 2, "A new predecessor".
func (m *Machine) onNewSucc(now time.Time, from node.ID, msg Msg) {
	switch m.st {
	case stLeaving, stLeft:
		m.pred = from
		m.send(from, m.cleaveMsg())
	case stLinking, stCoordinator:
		if !m.cfg.FaultTolerant {
			m.pred = from
		} else if msg.SuccTicket != m.ticket {
			return // meant for a former place of this ID
		} else {
			m.claim(now, from, msg.Ticket)
		}
		if len(m.preds) == 0 && m.pred == from {
			// A founder that was alone: its first predecessor vouches
			// for it from now (its UPDATE follows within a round).
			m.preds, m.predsFull = []Owner{{Ticket: NoTicket, ID: from}}, false
			m.alive[m.preds[0]] = now
		}
		m.send(from, Msg{Type: MsgAckSucc})
	}
}

// sendCleave sends (or resends) our CLEAVE to our predecessor. A process
// whose predecessor has not introduced itself yet (a joiner's NEWSUCC is
// on its way) waits for it: onNewSucc answers it with the CLEAVE.
func (m *Machine) sendCleave(now time.Time) {
	m.leaveAt = now.Add(m.cfg.Retry)
	if m.pred != m.cfg.ID {
		if !slices.Contains(m.cleaveTo, m.pred) {
			m.cleaveTo = append(m.cleaveTo, m.pred)
		}
		m.send(m.pred, m.cleaveMsg())
	}
	m.handL()
}

// handL: a leaving (or just left) process hands its successor its L, the
// R its predecessor p sent it, which is what p, the successor's
// predecessor once the CLEAVE is served, would send it next (§4, UPDATE).
// Without it the successor counts on the leaver's ALIVEs until p's next
// UPDATE reaches it, and if p is cut off just then it never does: with
// k = 1 the successor keeps one voucher of the two it needs and leaves
// the core, and the processes after it follow (doc.go, "A hand-back
// beside a cut"). Only an L that came from the process that serves (or
// served) our CLEAVE is handed on: p keeps that R among the lists its
// new successor may hold (onCLeave), which an exclusion of it needs.
func (m *Machine) handL() {
	// In a ring of two the successor serves the CLEAVE itself and is
	// alone after it: nothing to hand on.
	if !m.cfg.FaultTolerant || m.cfg.bug == bugNoHandL || m.succ == m.cfg.ID || m.succ == node.None || m.succ == m.pred ||
		len(m.preds) == 0 || m.preds[0].ID != m.pred {
		return
	}
	m.send(m.succ, Msg{Type: MsgHandL, Ticket: m.ticket, SuccTicket: m.succTicket, Preds: slices.Clone(m.preds)})
}

func (m *Machine) cleaveMsg() Msg {
	return Msg{Type: MsgCLeave, Attempt: m.attempt, Ticket: m.ticket, Succ: m.succ, SuccTicket: m.succTicket, N: m.n,
		Epochs: m.leftEpochs}
}

// onCLeave: Algorithm 2, "Receiving a cleave request". Only the current
// successor's CLEAVE is served; anyone else is told who our successor is,
// which walks a leaver with a stale predecessor towards the real one.
func (m *Machine) onCLeave(now time.Time, from node.ID, msg Msg) {
	// Remembered by incarnation (the attempt that placed it), not ID: a
	// process that came back under its ID, even to the same ticket, and
	// leaves again must be served again.
	if at, ok := m.cleaved[cleft{from, msg.Attempt}]; ok && now.Sub(at) < forget {
		m.send(from, Msg{Type: MsgAckCLeave})
		return
	}
	// Places are (ID, ticket): a restarted process keeps its ID. A CLEAVE
	// from our successor's ID for another ticket is not our successor's,
	// and one that would make our own former place our successor is
	// refused: the leaver stops answering UPDATEs, so we exclude it, and
	// that former place with it.
	samePlace := msg.Ticket == m.succTicket && (msg.Succ != m.cfg.ID || msg.SuccTicket == m.ticket)
	serve := from == m.succ && samePlace && (m.st == stLinking || m.st == stCoordinator) && m.temp == nil
	if m.cfg.bug == bugCleaveFromAnyone {
		serve = m.st == stLinking || m.st == stCoordinator
	}
	// Two neighbours leaving at once would each wait for the other (the
	// seed's rule skips a CLEAVE while leaving): when every process of a
	// stretch leaves, nobody would serve. A leaving process serves its
	// leaving successor when its ID is lower; it acts on nothing, so this
	// only merges what it will hand on.
	mergeOnly := from == m.succ && samePlace && m.st == stLeaving && m.cfg.ID < from
	serve = serve || mergeOnly
	if !serve || msg.SuccTicket >= m.n {
		next := m.succ
		if m.st == stLeft || m.st == stExcluded {
			next = m.lastPred
		}
		if next != from {
			m.send(from, Msg{Type: MsgReject, Succ: next})
		}
		return
	}
	m.cleaved[cleft{from, msg.Attempt}] = now
	m.send(from, Msg{Type: MsgAckCLeave})
	delete(m.view, msg.Ticket)
	for _, e := range msg.Epochs {
		if e.Ticket < m.n {
			m.epochs[e.Ticket] = max(m.epochs[e.Ticket], e.Epoch)
			m.noteEpoch(e.Epoch)
		}
	}
	m.succ, m.succTicket = msg.Succ, msg.SuccTicket
	if m.succ != m.cfg.ID {
		// The new successor's L is the leaver's R until one of our
		// UPDATEs reaches it, or, once the leaver hands it on (MsgHandL),
		// an R we sent the leaver: those stay among the lists an
		// exclusion of it must take a majority of (exclude.go).
		rs := m.sentRs
		m.newSucc(now, m.succ, m.succTicket)
		m.sentRs = rs
	}
	m.dropSucc(now, from)
	if !mergeOnly {
		m.absorb(now, from, msg.Ticket)
		m.preds = m.dropTaken(m.preds)
	}
	if mergeOnly {
		m.leftEpochs = append(m.leftEpochs, m.handOver(slices.Collect(maps.Keys(m.epochs)))...)
		if m.succ == m.cfg.ID { // everyone else has gone: the pool ends
			m.st, m.leaveAt = stLeft, time.Time{}
			m.events = append(m.events, LeftEvent{Event: "left"})
		}
		return
	}
	if m.succ == m.cfg.ID {
		m.await, m.succAt, m.pred = false, time.Time{}, m.cfg.ID // alone again
		m.preds, m.succs = nil, nil
		if m.st == stLinking {
			m.act(now)
		}
		return
	}
	m.await = true
	m.send(m.succ, Msg{Type: MsgNewSucc, Ticket: m.ticket, SuccTicket: m.succTicket})
	m.succAt = now.Add(m.cfg.Retry)
	m.updateNow(now, true) // the new successor's L is still the leaver's R
}

// leave: Algorithm 2, "Leaving the cluster". The ticket is given up (no
// longer acted on) before the CLEAVE goes out.
func (m *Machine) leave(now time.Time) {
	switch m.st {
	case stIdle:
		m.st = stLeft
	case stJoining, stLinking:
		m.leaveReq = true
	case stCoordinator:
		if m.temp != nil {
			m.leaveReq = true // hand over once the exclusion is done
			return
		}
		if m.succ != m.cfg.ID && m.confirmLeave(now) {
			return // handBack once every neighbour has answered (confirm.go)
		}
		m.handBack(now)
	}
}

// handBack gives the ticket back (Algorithm 2): the process stops acting
// and sends CLEAVE to its predecessor.
func (m *Machine) handBack(now time.Time) {
	m.events = append(m.events, ReleasedEvent{Event: "released", Ticket: m.ticket, Epoch: m.epoch})
	if m.succ == m.cfg.ID {
		m.st = stLeft // the last member: the pool ends with it
		m.events = append(m.events, LeftEvent{Event: "left"})
		return
	}
	m.st, m.await = stLeaving, false
	m.leftEpochs = m.handOver(m.span())
	m.sendCleave(now)
}

// Tick implements node.Machine.
func (m *Machine) Tick(now time.Time) {
	m.noteRun(now)
	m.checkSupport(now)
	m.noteLate(now) // after: a stretch never brings back support that ran out
	if m.inRing() && m.cfg.FaultTolerant {
		m.exclusionTimers(now)
		m.leaveTimer(now)
		if !now.Before(m.roundAt) {
			m.round(now)
		} else if !m.updAt.IsZero() && !now.Before(m.updAt) {
			// Not when the successor changed since (newSucc clears pendR):
			// an UPDATE with no R would leave the new successor with an
			// empty L, and the next round sends it ours.
			if !m.updAcked && m.temp == nil && m.succ != m.cfg.ID && m.st != stLeaving && !m.banned(now, m.succTicket) && m.pendR != nil {
				m.sendUpdate(now)
			}
			m.updAt = time.Time{} // once a round
		}
		m.checkSupport(now)
	}
	m.strandedVouch(now)
	if m.st == stJoining && !now.Before(m.joinAt) {
		m.joinSilence()
		m.sendJoin(now)
	}
	if m.await && (m.st == stLinking || m.st == stCoordinator) && !now.Before(m.succAt) {
		m.send(m.succ, Msg{Type: MsgNewSucc, Ticket: m.ticket, SuccTicket: m.succTicket})
		m.succAt = now.Add(m.cfg.Retry)
	}
	if m.st == stLeaving && !now.Before(m.leaveAt) {
		m.sendCleave(now)
	}
	if m.st == stLeft && !m.handUntil.IsZero() && !now.Before(m.leaveAt) {
		if now.Before(m.handUntil) {
			m.handL()
			m.leaveAt = now.Add(m.cfg.Retry)
		} else {
			m.handUntil, m.leaveAt = time.Time{}, time.Time{}
		}
	}
	for id, a := range m.answered {
		if now.Sub(a.at) >= forget {
			delete(m.answered, id)
		}
	}
	for id, at := range m.cleaved {
		if now.Sub(at) >= forget {
			delete(m.cleaved, id)
		}
	}
	m.hintFree(now)
}

// Ready implements node.Machine.
func (m *Machine) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: m.out, Events: m.events}
	m.out, m.events = nil, nil
	var due []time.Time
	if m.st == stJoining {
		due = append(due, m.joinAt)
	}
	if m.await && (m.st == stLinking || m.st == stCoordinator) {
		due = append(due, m.succAt)
	}
	if m.st == stLeaving || m.st == stLeft && !m.handUntil.IsZero() {
		due = append(due, m.leaveAt)
	}
	due = append(due, m.strandedWake())
	if m.inRing() && m.cfg.FaultTolerant {
		due = append(due, m.roundAt, m.SupportedUntil())
		if !m.updAcked {
			due = append(due, m.updAt)
		}
		if m.ex != nil {
			due = append(due, m.ex.deadline, m.ex.resend)
		}
		if m.temp != nil {
			due = append(due, m.temp.until)
		}
		if m.leaveCheck != nil {
			due = append(due, m.leaveCheck.until)
		}
	}
	for _, t := range due {
		if !t.IsZero() && (r.Wake.IsZero() || t.Before(r.Wake)) {
			r.Wake = t
		}
	}
	return r
}

// L returns L_p, the predecessors this process counts its support from,
// closest first.
func (m *Machine) L() []Owner { return slices.Clone(m.preds) }

// Status describes the machine for status queries.
func (m *Machine) Status() any {
	st := map[string]any{"id": m.cfg.ID, "state": m.st.String(), "tickets": m.n, "ticket": m.ticket,
		"epoch": m.epoch, "succ": m.succ, "succ_ticket": m.succTicket, "pred": m.pred, "range": m.Range(),
		"preds": m.preds, "succs": m.succs, "rounds": m.counts.Rounds}
	if m.cfg.FaultTolerant && m.inRing() {
		heard := map[string]time.Time{}
		for _, o := range m.preds {
			if at, ok := m.vouch(o); ok {
				heard[o.ID.String()] = at
			}
		}
		st["alive_from"] = heard
		st["supported_until"] = m.SupportedUntil()
		st["alive_sent"], st["alive_received"] = m.counts.AliveSent, m.counts.AliveRecv
		st["health"] = m.Health() // local-health factor, 1 on time (rounds.go)
	}
	if m.temp != nil {
		st["temporary_until"] = m.temp.until
		st["temporary_successor"] = m.temp.q.ID
	}
	return st
}
