package mutex

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/clock"
	"github.com/roundtable-go/roundtable/pkg/fd"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Ricart–Agrawala (Tanenbaum ch. 6, "A Distributed Algorithm"): a process that
// wants a lock stamps a request with its Lamport time and asks everyone; a
// process replies OK unless it holds the lock or wants it with an earlier
// (timestamp, ID), in which case it defers the OK until it leaves. With
// every OK in, the requester enters. Entries therefore happen in (timestamp,
// ID) order, which is also the fencing token: timestamp << 32 | ID.
//
// The seed's fix for its n points of failure is built in: every request is
// answered at once, OK or DENY (an OK follows a DENY later); unanswered
// requests are resent; and a process silent for two leases (every process
// sends an ALIVE every quarter lease) is declared dead and no longer waited
// for. A restarted process first listens for one lease so its Lamport clock
// passes every timestamp already used.
//
// Fault model: crash and restart, loss, duplication, reordering; tokens
// keep growing as long as some process that saw the latest entries is up,
// or restarted processes persist their clock (Config.Term). Not
// partitions or pauses that make a process silent for the failure
// detector's two leases (its last ALIVE can go out up to a quarter lease
// before a pause begins, so a pause of 1.75 leases is enough): a process
// silent that long is presumed dead and the others proceed without
// it (fencing tokens are the safety net there: the cut-off side's tokens
// are lower). Use --algo central for those.

type raWant struct {
	client  uint64
	attempt uint64
}

// raLock is this daemon's state for one name.
type raLock struct {
	queue    []raWant // local clients, FCFS; the head has the daemon's request out
	ts       uint64   // the head's request timestamp (0: none out)
	attempt  uint64
	oks      map[node.ID]bool
	answered map[node.ID]bool // OK or DENY seen: alive and aware
	resend   time.Time
	held     bool
	token    uint64
	// deferred: the peers whose requests wait for this turn to end, each
	// with the attempt of its latest request, which the OK echoes (the
	// requester counts only OKs for its current attempt).
	deferred map[node.ID]uint64
}

type ra struct {
	cfg     Config
	others  []node.ID
	lc      clock.Lamport
	alive   *fd.Timeout
	locks   map[string]*raLock
	joined  time.Time // requests go out only once the clock has caught up
	started time.Time
	start   bool
	beat    time.Time
	seq     uint64
	now     time.Time // the latest time seen, so Ready names only future deadlines

	out    []node.Envelope[Msg]
	events []node.Event
}

func newRA(cfg Config) (*ra, error) {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultConfig().Lease
	}
	if !slices.Contains(cfg.Peers, cfg.ID) || cfg.ID == node.None {
		return nil, fmt.Errorf("mutex: own id %d is not in the peer list", cfg.ID)
	}
	m := &ra{cfg: cfg, alive: fd.NewTimeout(2 * cfg.Lease), locks: map[string]*raLock{}, seq: firstAttempt(cfg)}
	m.lc.Observe(cfg.Term) // the clock persisted by an earlier life, if any
	for _, p := range cfg.Peers {
		if p != cfg.ID && !slices.Contains(m.others, p) {
			m.others = append(m.others, p)
		}
	}
	slices.Sort(m.others)
	return m, nil
}

func (m *ra) send(to node.ID, msg Msg) {
	m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: to, Msg: msg})
}

func (m *ra) live(p node.ID, now time.Time) bool { return !m.alive.Suspected(p, now) }

func raToken(ts uint64, id node.ID) uint64 { return ts<<32 | uint64(id) }

// before reports whether request (ta, a) precedes (tb, b).
func before(ta uint64, a node.ID, tb uint64, b node.ID) bool {
	return ta < tb || ta == tb && a < b
}

// Step implements node.Machine.
func (m *ra) Step(now time.Time, in node.Envelope[Msg]) error {
	m.begin(now)
	if in.From == m.cfg.ID {
		return m.local(now, in.Msg)
	}
	if !slices.Contains(m.others, in.From) {
		return fmt.Errorf("mutex: message from %d, not a peer", in.From)
	}
	msg := in.Msg
	m.alive.Heard(in.From, now)
	switch msg.Type {
	case MsgRAAlive:
		m.lc.Observe(msg.Term)
	case MsgRARequest:
		m.lc.Observe(msg.Term)
		l := m.locks[msg.Name]
		mine := l != nil && (l.held || l.ts != 0 && before(l.ts, m.cfg.ID, msg.Term, in.From)) && !m.cfg.raAlwaysOK
		if mine {
			if l.deferred == nil {
				l.deferred = map[node.ID]uint64{}
			}
			l.deferred[in.From] = msg.Attempt
			m.send(in.From, Msg{Type: MsgRADeny, Name: msg.Name, Term: m.lc.Tick(), Attempt: msg.Attempt})
		} else {
			m.send(in.From, Msg{Type: MsgRAOK, Name: msg.Name, Term: m.lc.Tick(), Attempt: msg.Attempt})
		}
	case MsgRAOK, MsgRADeny:
		m.lc.Observe(msg.Term)
		l := m.locks[msg.Name]
		if l == nil || l.held || l.ts == 0 || msg.Attempt != l.attempt {
			return nil
		}
		l.answered[in.From] = true
		if msg.Type == MsgRAOK {
			l.oks[in.From] = true
		}
		m.tryEnter(now, msg.Name, l)
	default:
		return fmt.Errorf("mutex: %v is not a Ricart–Agrawala message", msg.Type)
	}
	return nil
}

func (m *ra) begin(now time.Time) {
	m.now = now
	if !m.start {
		m.start = true
		// Listen for a lease first: ALIVEs carry the peers' clocks, so our
		// first timestamp comes after every one already used.
		m.joined, m.started = now.Add(m.cfg.Lease), now
		m.beat = now
	}
}

func (m *ra) local(now time.Time, msg Msg) error {
	switch msg.Type {
	case LocalAcquire:
		var queue []raWant
		if l := m.locks[msg.Name]; l != nil {
			queue = l.queue // the head holds the name when held
		}
		if ok, err := admit(msg, queue, func(w raWant) uint64 { return w.client }, &m.events); !ok {
			return err
		}
		l := m.locks[msg.Name]
		if l == nil {
			l = &raLock{}
			m.locks[msg.Name] = l
		}
		m.seq++
		l.queue = append(l.queue, raWant{client: msg.Client, attempt: m.seq})
		m.request(now, msg.Name, l)
	case LocalRelease:
		l := m.locks[msg.Name]
		if l == nil {
			return nil
		}
		i := slices.IndexFunc(l.queue, func(w raWant) bool { return w.client == msg.Client })
		if i < 0 {
			return nil
		}
		if i > 0 {
			l.queue = slices.Delete(l.queue, i, i+1)
			return nil
		}
		if l.held {
			m.events = append(m.events, ReleasedEvent{Event: "released", Name: msg.Name, Client: msg.Client, Token: l.token})
		}
		m.leave(now, msg.Name, l)
	default:
		return fmt.Errorf("mutex: %v is not a local request", msg.Type)
	}
	return nil
}

// request sends the head client's request, if none is out and the clock
// has caught up.
func (m *ra) request(now time.Time, name string, l *raLock) {
	if len(l.queue) == 0 || l.ts != 0 || l.held || now.Before(m.joined) {
		return
	}
	l.ts = m.lc.Tick()
	l.attempt = l.queue[0].attempt
	l.oks, l.answered = map[node.ID]bool{}, map[node.ID]bool{}
	for _, p := range m.others {
		m.send(p, Msg{Type: MsgRARequest, Name: name, Term: l.ts, Attempt: l.attempt})
	}
	l.resend = now.Add(m.cfg.Lease / 4)
	m.tryEnter(now, name, l)
}

// tryEnter enters when every live peer has said OK.
func (m *ra) tryEnter(now time.Time, name string, l *raLock) {
	if l.held || l.ts == 0 {
		return
	}
	for _, p := range m.others {
		if !l.oks[p] && m.live(p, now) {
			return
		}
	}
	l.held, l.token = true, raToken(l.ts, m.cfg.ID)
	m.events = append(m.events, GrantEvent{Event: "acquired", Name: name, Client: l.queue[0].client, Token: l.token,
		Valid: m.cfg.Lease, At: now})
}

// leave ends the head's turn: deferred requests get their OK, and the next
// local client's request goes out.
func (m *ra) leave(now time.Time, name string, l *raLock) {
	if m.cfg.raHandoff && l.held && len(l.queue) > 1 {
		l.queue = l.queue[1:]
		l.ts = m.lc.Tick()
		l.token = raToken(l.ts, m.cfg.ID)
		m.events = append(m.events, GrantEvent{Event: "acquired", Name: name, Client: l.queue[0].client, Token: l.token, Valid: m.cfg.Lease, At: now})
		return
	}
	// Ricart and Agrawala §2: on leaving, reply to every deferred request.
	for _, p := range slices.Sorted(maps.Keys(l.deferred)) {
		m.send(p, Msg{Type: MsgRAOK, Name: name, Term: m.lc.Tick(), Attempt: l.deferred[p]})
	}
	l.deferred = nil
	l.queue = l.queue[1:]
	l.held, l.ts, l.token, l.oks, l.answered = false, 0, 0, nil, nil
	if len(l.queue) == 0 {
		delete(m.locks, name)
		return
	}
	m.request(now, name, l)
}

// Tick implements node.Machine.
func (m *ra) Tick(now time.Time) {
	m.begin(now)
	if !now.Before(m.beat) {
		for _, p := range m.others {
			m.send(p, Msg{Type: MsgRAAlive, Term: m.lc.Now()})
		}
		m.beat = now.Add(m.cfg.Lease / 4)
	}
	names := slices.Sorted(maps.Keys(m.locks))
	for _, name := range names {
		l := m.locks[name]
		if l.ts == 0 {
			m.request(now, name, l)
			continue
		}
		if l.held {
			continue
		}
		if !now.Before(l.resend) {
			// Resend to live peers that have not said OK: the request or
			// the answer was lost, or the peer restarted and forgot the
			// OK it deferred. Repeats are harmless.
			for _, p := range m.others {
				if !l.oks[p] && m.live(p, now) {
					m.send(p, Msg{Type: MsgRARequest, Name: name, Term: l.ts, Attempt: l.attempt})
				}
			}
			l.resend = now.Add(m.cfg.Lease / 2)
		}
		m.tryEnter(now, name, l) // a silent peer may just have been declared dead
	}
}

// Ready implements node.Machine.
func (m *ra) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: m.out, Events: m.events, Wake: m.beat}
	m.out, m.events = nil, nil
	wake := func(t time.Time) {
		if t.After(m.now) && t.Before(r.Wake) {
			r.Wake = t
		}
	}
	for _, l := range m.locks {
		if l.ts != 0 && !l.held {
			wake(l.resend)
			for _, p := range m.others {
				if !l.oks[p] {
					if d := m.alive.Deadline(p); !d.IsZero() {
						wake(d)
					}
				}
			}
		} else if l.ts == 0 && len(l.queue) > 0 {
			wake(m.joined)
		}
	}
	return r
}

// Holdings implements Machine. Without a coordinator there is no lease to
// run out; a holding is good for one more lease while this daemon runs, so
// a client whose daemon is paused or dead gives up within a lease, before
// the peers (two leases) declare the daemon dead.
func (m *ra) Holdings(now time.Time) []Holding {
	var out []Holding
	names := slices.Sorted(maps.Keys(m.locks))
	for _, n := range names {
		if l := m.locks[n]; l.held {
			out = append(out, Holding{Name: n, Client: l.queue[0].client, Token: l.token, Until: now.Add(m.cfg.Lease)})
		}
	}
	return out
}

// Clock is the Lamport clock, for stable storage (restart with Config.Term
// set to it, so tokens keep growing).
func (m *ra) Clock() uint64 { return m.lc.Now() }

// Status implements Machine.
func (m *ra) Status() any {
	locks := []LockStatus{}
	for _, n := range slices.Sorted(maps.Keys(m.locks)) {
		l := m.locks[n]
		row := LockStatus{Name: n, Node: m.cfg.ID, Stamp: l.ts}
		waiting := l.queue
		if l.held && len(l.queue) > 0 {
			row.Holder, row.Client, row.Token, row.Stamp = m.cfg.ID, l.queue[0].client, l.token, 0
			waiting = l.queue[1:]
		}
		for _, w := range waiting {
			row.Queue = append(row.Queue, fmt.Sprintf("%d/%d", m.cfg.ID, w.client))
		}
		if row.Holder != node.None || len(row.Queue) > 0 {
			locks = append(locks, row)
		}
	}
	return map[string]any{"id": m.cfg.ID, "algo": m.cfg.Algo.String(), "clock": m.lc.Now(), "locks": locks,
		"down": down(m.alive, m.others, m.cfg.ID, m.started, m.now)}
}
