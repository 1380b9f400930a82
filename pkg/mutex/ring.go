package mutex

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/fd"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Token ring (Schaffernicht, Topic V, and Tanenbaum §6.3, "A Token Ring Algorithm", Le Lann), made
// crash-tolerant as in Arantes–Sopena (Arantes–Sopena, Fig. 2).
//
// One token circulates along the ring of daemons in ID order. The daemon
// holding it lets the first waiting local client of each name in, keeps
// the token while any of them is inside and passes it on when the last one
// leaves; a name is therefore entered at most once per visit, in ring
// order. The token serialises all names: one daemon's clients are inside
// at a time, as in Le Lann's ring (use central or ricart-agrawala for
// independent names). The fencing token of an entry is the token's count,
// which only grows. An idle token waits Config.RingHold (1ms) per daemon.
//
// SafeSendToken (Arantes–Sopena lines 16–22): the holder increments count and
// sends ⟨TOKEN, S_T, count⟩ to its next k+1 live successors; the first, S_T,
// becomes the REAL holder, the other k keep BACKUP copies. Each recipient's
// detection set D is the ring from S_T to itself (lines 23–35): it monitors
// those daemons and, when all but itself have crashed, calls UseBackup
// (lines 38–43): count += #D − 1, so any late copy of an older token is
// discarded, and it becomes the REAL holder. Up to k consecutive crashes
// therefore never lose the token.
//
// Gaps the paper leaves, filled here. Channels lose and duplicate messages:
// every TOKEN is acknowledged and resent until acknowledged (or the
// recipient is declared crashed); duplicates are discarded by count. The
// failure detector is heartbeats (every lease/4) and a two-lease timeout;
// a daemon heard with a new boot number (they grow per restart) has
// restarted, which proves the old life crashed, and counts as such one
// lease after it is seen (its clients' leases have run out by then). The
// copy names its recipients with their boot numbers, and D is made of the
// recipients only: successors skipped as crashed hold nothing to wait for.
// A cluster starts (or
// restarts after losing every copy) with a token created by the lowest
// daemon once every daemon is up and reports holding no copy: at once when
// none has ever seen a token, otherwise after four leases without any count
// growing. Counts are persisted (Config.Term, Clock) and the new count
// passes every one reported, so fencing tokens keep growing across full
// restarts.
//
// Fault model: crash and restart, loss, duplication, reordering, at most k
// consecutive daemons crashed at once. The failure detector must not make
// mistakes (Arantes–Sopena §II): no partitions or message delays longer than two
// leases, since a daemon falsely declared crashed would leave two REAL
// tokens. A daemon that was itself stopped for more than a lease (SIGSTOP)
// notices on waking, drops its copy and revokes its clients' locks. Use
// --algo central for partitions.

type ringState uint8

const (
	ringNone ringState = iota
	ringBackup
	ringReal
)

func (s ringState) String() string {
	return [...]string{"none", "backup", "real"}[s]
}

// ringMember is one daemon of a detection set, with the boot number it had
// when the set was made (0: unknown).
type ringMember struct {
	id   node.ID
	boot uint64
}

type ringWant struct {
	client uint64
	held   bool
	token  uint64
	giveUp time.Time // non-blocking: busy if the token has not come by then
}

type ringPeer struct {
	boot      uint64    // latest boot number known (they only grow)
	rebooted  time.Time // when it last grew
	count     uint64    // highest count it reported
	state     ringState // its latest report
	heardWhen time.Time
}

type ring struct {
	cfg    Config
	ring   []node.ID // every daemon, in ring (ID) order
	others []node.ID
	k      int
	boot   uint64
	alive  *fd.Timeout
	peers  map[node.ID]*ringPeer

	state  ringState
	count  uint64
	holder ringMember   // S_T of the copy we hold
	detect []ringMember // D

	wants map[string][]*ringWant // local clients per name, FCFS

	// the copy being sent: resent until every recipient acknowledged
	sending   Msg
	unacked   []node.ID
	resend    time.Time
	forwardAt time.Time // a REAL token waiting for IdleHold

	started   time.Time
	lastGrow  time.Time // when any count seen last grew
	maxSeen   uint64
	beat      time.Time
	now       time.Time
	everToken bool

	out    []node.Envelope[Msg]
	events []node.Event
}

func newRing(cfg Config) (*ring, error) {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultConfig().Lease
	}
	if !slices.Contains(cfg.Peers, cfg.ID) || cfg.ID == node.None {
		return nil, fmt.Errorf("mutex: own id %d is not in the peer list", cfg.ID)
	}
	ids := slices.Clone(cfg.Peers)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	k := cfg.Backups
	switch {
	case k < 0:
		k = 0
	case k == 0 || k > len(ids)-1:
		k = len(ids) - 1
	}
	if cfg.RingHold == 0 {
		cfg.RingHold = time.Millisecond
	}
	m := &ring{cfg: cfg, ring: ids, k: k, alive: fd.NewTimeout(2 * cfg.Lease), peers: map[node.ID]*ringPeer{},
		wants: map[string][]*ringWant{}, count: cfg.Term, maxSeen: cfg.Term}
	if m.boot = cfg.Boot; m.boot == 0 {
		return nil, fmt.Errorf("mutex: token ring needs Config.Boot, growing with every restart")
	}
	for _, p := range ids {
		if p != cfg.ID {
			m.others = append(m.others, p)
			m.peers[p] = &ringPeer{}
		}
	}
	return m, nil
}

func (m *ring) send(to node.ID, msg Msg) {
	m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: to, Msg: msg})
}

// crashed reports whether daemon member (as it was when recorded) has
// crashed: declared dead by the failure detector, or heard again with a new
// boot number at least a lease ago.
func (m *ring) crashed(mb ringMember, now time.Time) bool {
	if mb.id == m.cfg.ID {
		return false
	}
	p := m.peers[mb.id]
	if p.heardWhen.IsZero() {
		// Never heard: crashed only once this daemon has listened for as
		// long as the failure detector's bound (a restarted daemon must
		// not take silence it has not waited for as a crash).
		return now.Sub(m.started) > m.alive.Bound
	}
	if m.alive.Suspected(mb.id, now) {
		return true
	}
	// An earlier life ended when a later one appeared; it counts as
	// crashed a lease later, when its clients' leases have run out.
	return mb.boot < p.boot && now.Sub(p.rebooted) >= m.cfg.Lease
}

func (m *ring) live(id node.ID, now time.Time) bool {
	// A successor must have told its boot number: the token names it.
	if id == m.cfg.ID {
		return true
	}
	p := m.peers[id]
	return p.boot != 0 && !m.crashed(ringMember{id: id, boot: p.boot}, now)
}

func (m *ring) begin(now time.Time) {
	if !m.now.IsZero() && now.Sub(m.now) > m.cfg.Lease {
		m.stalled(now)
	}
	m.now = now
	if m.started.IsZero() {
		m.started, m.lastGrow, m.beat = now, now, now
	}
}

// stalled: this daemon could not run for more than a lease (SIGSTOP, a
// suspended VM). Its heartbeats stop every lease/4, so the others may have
// declared it crashed and regenerated the token: whatever copy it holds
// may be stale, and a paused daemon is outside the algorithm's fault model
// (Arantes–Sopena needs a failure detector that makes no mistakes). It gives up
// like a crashed one would: its clients lose their locks and its copy is
// dropped.
func (m *ring) stalled(now time.Time) {
	for name, q := range m.wants {
		for _, w := range q {
			if w.held {
				m.events = append(m.events, LostEvent{Event: "lost", Name: name, Client: w.client, Token: w.token,
					Reason: "this daemon was stopped for longer than a lease"})
			}
		}
		delete(m.wants, name)
	}
	m.state, m.detect, m.forwardAt, m.unacked = ringNone, nil, time.Time{}, nil
}

// Step implements node.Machine.
func (m *ring) Step(now time.Time, in node.Envelope[Msg]) error {
	m.begin(now)
	if in.From == m.cfg.ID {
		return m.local(now, in.Msg)
	}
	p := m.peers[in.From]
	if p == nil {
		return fmt.Errorf("mutex: message from %d, not a peer", in.From)
	}
	msg := in.Msg
	m.alive.Heard(in.From, now)
	p.heardWhen = now
	m.seen(now, msg.Term)
	switch msg.Type {
	case MsgTRAlive:
		m.learn(now, in.From, msg.Seq, true)
		p.count, p.state = msg.Term, ringState(msg.Token)
		if p.count > 0 || p.state != ringNone {
			m.everToken = true
		}
		m.create(now) // the last report a fresh start waited for
	case MsgTRToken:
		m.send(in.From, Msg{Type: MsgTRAck, Term: msg.Term})
		m.receive(now, msg)
	case MsgTRAck:
		if m.sending.Type == MsgTRToken && msg.Term == m.sending.Term {
			m.unacked = slices.DeleteFunc(m.unacked, func(id node.ID) bool { return id == in.From })
		}
	default:
		return fmt.Errorf("mutex: %v is not a token-ring message", msg.Type)
	}
	return nil
}

// learn records a peer's boot number, heard from it (direct) or named in a
// token. A later life proves the earlier ones crashed; one this daemon has
// not heard yet counts as just heard: the sender heard it lately, and the
// failure detector's full bound starts now.
func (m *ring) learn(now time.Time, id node.ID, boot uint64, direct bool) {
	p := m.peers[id]
	if p == nil || boot <= p.boot {
		return
	}
	if p.boot != 0 {
		p.rebooted = now
	}
	p.boot = boot
	if !direct {
		m.alive.Heard(id, now)
		p.heardWhen = now
	}
}

func (m *ring) seen(now time.Time, count uint64) {
	if count > m.maxSeen {
		m.maxSeen, m.lastGrow = count, now
	}
}

// receive is SafeReceiveToken (Arantes–Sopena lines 23–35).
func (m *ring) receive(now time.Time, msg Msg) {
	if msg.Term <= m.count {
		return // an old or duplicate copy
	}
	i := slices.IndexFunc(msg.Members, func(mb Member) bool { return mb.ID == m.cfg.ID })
	if i < 0 || msg.Members[i].Boot != m.boot {
		// Sent to this daemon's previous life, which crashed: the others
		// will count it as crashed (and regenerate the token if it was to
		// be the holder), so this copy must not count here.
		return
	}
	m.adopt(now, msg)
}

// adopt takes a copy of the token (lines 25–35, after the count check).
func (m *ring) adopt(now time.Time, msg Msg) {
	m.everToken = true
	m.count = msg.Term
	for _, mb := range msg.Members {
		if mb.ID != m.cfg.ID {
			m.learn(now, mb.ID, mb.Boot, false)
		}
	}
	m.holder = ringMember{id: msg.Members[0].ID, boot: msg.Members[0].Boot}
	m.detect = m.between(msg.Members)
	if m.holder.id == m.cfg.ID {
		m.state = ringReal
		m.visit(now)
		return
	}
	m.state = ringBackup
	m.check(now)
}

// between is D (line 27): the recipients of the copy from S_T to this
// daemon, both included, with their boot numbers when it was sent. The
// paper's D is the ring from S_T on; successors the sender skipped as
// crashed hold no copy and need no watching.
func (m *ring) between(members []Member) []ringMember {
	var d []ringMember
	for _, mb := range members {
		d = append(d, ringMember{id: mb.ID, boot: mb.Boot})
		if mb.ID == m.cfg.ID {
			break
		}
	}
	return d
}

// check is ReceiveSuspected (lines 36–39): with every other member of D
// crashed, this backup becomes the holder.
func (m *ring) check(now time.Time) {
	if m.state != ringBackup {
		return
	}
	for _, mb := range m.detect {
		if !m.crashed(mb, now) && mb.id != m.cfg.ID {
			return
		}
	}
	// UseBackup (lines 38–43).
	if !m.cfg.ringNoBump {
		m.count += uint64(len(m.detect) - 1)
	}
	m.seen(now, m.count)
	m.state = ringReal
	m.holder = ringMember{id: m.cfg.ID, boot: m.boot}
	m.detect = []ringMember{m.holder}
	m.visit(now)
}

// visit is the REAL holder's turn (Tanenbaum ch. 6, "A Token Ring Algorithm":
// a process holding the token may enter, and passes it on when it leaves).
// Each name's first waiting local client enters; the token stays while any
// local client is inside and moves on when the last one leaves, so a name
// is entered at most once per visit and goes round in ring order.
func (m *ring) visit(now time.Time) {
	m.forwardAt = time.Time{}
	names := slices.Sorted(maps.Keys(m.wants))
	entered := false
	for _, name := range names {
		q := m.wants[name]
		if len(q) == 0 || q[0].held {
			continue
		}
		w := q[0]
		w.held, w.token = true, m.count
		entered = true
		m.events = append(m.events, GrantEvent{Event: "acquired", Name: name, Client: w.client, Token: w.token, Valid: m.cfg.Lease, At: now})
	}
	m.passOn(now, entered)
}

// inside reports whether a local client holds a name.
func (m *ring) inside() bool {
	for _, q := range m.wants {
		if len(q) > 0 && q[0].held {
			return true
		}
	}
	return false
}

// passOn forwards the token unless a local client is inside; an idle token
// waits RingHold first, so an idle ring does not spin.
func (m *ring) passOn(now time.Time, busy bool) {
	alone := !slices.ContainsFunc(m.others, func(id node.ID) bool { return m.live(id, now) })
	switch {
	case m.inside():
	case alone:
		// Nobody to pass to: keep it, and look again now and then (a
		// token sent to oneself would come straight back). The count
		// still grows per visit, for the fencing tokens.
		m.count++
		m.seen(now, m.count)
		m.forwardAt = now.Add(max(m.cfg.RingHold, m.cfg.Lease/4))
	case busy || m.cfg.RingHold < 0:
		m.forward(now)
	default:
		m.forwardAt = now.Add(m.cfg.RingHold)
	}
}

// forward is SafeSendToken (lines 16–22): count + 1 to the next k+1 live
// successors, the first of which becomes the holder.
func (m *ring) forward(now time.Time) {
	var to []node.ID
	i := slices.Index(m.ring, m.cfg.ID)
	for j := 1; j <= len(m.ring) && len(to) < m.k+1; j++ {
		id := m.ring[(i+j)%len(m.ring)]
		if m.live(id, now) {
			to = append(to, id)
		}
	}
	m.count++
	m.seen(now, m.count)
	msg := Msg{Type: MsgTRToken, Term: m.count}
	for _, id := range to {
		b := m.boot
		if id != m.cfg.ID {
			b = m.peers[id].boot
		}
		msg.Members = append(msg.Members, Member{ID: id, Boot: b})
	}
	m.state, m.detect, m.forwardAt = ringNone, nil, time.Time{}
	m.sending, m.unacked = msg, nil
	for _, id := range to {
		if id == m.cfg.ID {
			// k reaches round the ring: keep a backup copy.
			m.adopt(now, msg)
			continue
		}
		m.send(id, msg)
		m.unacked = append(m.unacked, id)
	}
	m.resend = now.Add(m.cfg.Lease / 8)
}

func (m *ring) local(now time.Time, msg Msg) error {
	switch msg.Type {
	case LocalAcquire:
		q := m.wants[msg.Name]
		if ok, err := admit(msg, q, func(w *ringWant) uint64 { return w.client }, &m.events); !ok {
			return err
		}
		w := &ringWant{client: msg.Client}
		if msg.NonBlock {
			// Whether another daemon is inside is known only where the
			// token is: wait for it a little, then call it busy.
			w.giveUp = now.Add(m.cfg.Lease / 2)
		}
		m.wants[msg.Name] = append(q, w)
		if m.state == ringReal && !m.forwardAt.IsZero() {
			m.visit(now) // the token is here, idling: use it
		}
	case LocalRelease:
		q := m.wants[msg.Name]
		i := slices.IndexFunc(q, func(w *ringWant) bool { return w.client == msg.Client })
		if i < 0 {
			return nil
		}
		held := q[i].held
		if held {
			m.events = append(m.events, ReleasedEvent{Event: "released", Name: msg.Name, Client: msg.Client, Token: q[i].token})
		}
		m.wants[msg.Name] = slices.Delete(q, i, i+1)
		if len(m.wants[msg.Name]) == 0 {
			delete(m.wants, msg.Name)
		}
		if held && m.state == ringReal {
			if m.cfg.ringRegrant {
				m.count++
				m.visit(now) // planted: the next local client enters on this visit too
			} else {
				m.passOn(now, true) // leaving passes the token on
			}
		}
	default:
		return fmt.Errorf("mutex: %v is not a local request", msg.Type)
	}
	return nil
}

// Tick implements node.Machine.
func (m *ring) Tick(now time.Time) {
	m.begin(now)
	if !now.Before(m.beat) {
		for _, p := range m.others {
			m.send(p, Msg{Type: MsgTRAlive, Term: m.count, Seq: m.boot, Token: uint64(m.state)})
		}
		m.beat = now.Add(m.cfg.Lease / 4)
	}
	if len(m.unacked) > 0 && !now.Before(m.resend) {
		m.unacked = slices.DeleteFunc(m.unacked, func(id node.ID) bool { return !m.live(id, now) })
		for _, id := range m.unacked {
			m.send(id, m.sending)
		}
		m.resend = now.Add(m.cfg.Lease / 8)
	}
	if m.state == ringReal && !m.forwardAt.IsZero() && !now.Before(m.forwardAt) {
		m.forward(now)
	}
	for name, q := range m.wants {
		if len(q) > 0 && !q[0].held && !q[0].giveUp.IsZero() && !now.Before(q[0].giveUp) {
			m.events = append(m.events, BusyEvent{Event: "busy", Name: name, Client: q[0].client})
			if m.wants[name] = q[1:]; len(m.wants[name]) == 0 {
				delete(m.wants, name)
			}
		}
	}
	m.check(now)
	m.create(now)
}

// create makes the first token (or a new one after every copy was lost):
// the lowest daemon does, once every daemon is up and reports holding no
// copy, and either nobody has ever seen a token or no count grew for four
// leases (no copy can still be in flight).
func (m *ring) create(now time.Time) {
	if m.state != ringNone || len(m.unacked) > 0 {
		return
	}
	fresh := !m.everToken && m.count == 0
	for _, id := range m.others {
		p := m.peers[id]
		if !m.live(id, now) {
			// Everyone must report: a daemon that is down may remember
			// (in its state file) a count higher than any live one, and a
			// new token's fencing tokens must pass it.
			return
		}
		if id < m.cfg.ID || p.state != ringNone || now.Sub(p.heardWhen) > m.cfg.Lease/2 {
			return
		}
		if fresh && p.count != 0 {
			return
		}
	}
	if !fresh && (now.Sub(m.lastGrow) < 4*m.cfg.Lease || now.Sub(m.started) < 4*m.cfg.Lease) {
		return
	}
	// A count above any used: what this daemon saw, plus a full ring's
	// worth for copies it may have missed.
	m.count = m.maxSeen + uint64(len(m.ring))
	m.everToken = true
	m.state = ringReal
	m.holder = ringMember{id: m.cfg.ID, boot: m.boot}
	m.detect = []ringMember{m.holder}
	m.visit(now)
}

// Ready implements node.Machine.
func (m *ring) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: m.out, Events: m.events, Wake: m.beat}
	m.out, m.events = nil, nil
	wake := func(t time.Time) {
		if t.After(m.now) && t.Before(r.Wake) {
			r.Wake = t
		}
	}
	if len(m.unacked) > 0 {
		wake(m.resend)
	}
	if !m.forwardAt.IsZero() {
		wake(m.forwardAt)
	}
	for _, q := range m.wants {
		if len(q) > 0 && !q[0].giveUp.IsZero() {
			wake(q[0].giveUp)
		}
	}
	return r
}

// Holdings implements Machine: as with Ricart–Agrawala, a holding is good
// for one more lease while this daemon runs.
func (m *ring) Holdings(now time.Time) []Holding {
	var out []Holding
	names := slices.Sorted(maps.Keys(m.wants))
	for _, n := range names {
		for _, w := range m.wants[n] {
			if w.held {
				out = append(out, Holding{Name: n, Client: w.client, Token: w.token, Until: now.Add(m.cfg.Lease)})
			}
		}
	}
	return out
}

// Clock is the highest count seen, for stable storage (restart with
// Config.Term set to it, so fencing tokens keep growing).
func (m *ring) Clock() uint64 { return max(m.count, m.maxSeen) }

// Status implements Machine: this daemon's part of the ring and the locks
// its clients hold (nobody else can hold one while the token is here).
func (m *ring) Status() any {
	locks := []LockStatus{}
	for _, n := range slices.Sorted(maps.Keys(m.wants)) {
		row := LockStatus{Name: n, Node: m.cfg.ID}
		for _, w := range m.wants[n] {
			if w.held {
				row.Holder, row.Client, row.Token = m.cfg.ID, w.client, w.token
			} else {
				row.Queue = append(row.Queue, fmt.Sprintf("%d/%d", m.cfg.ID, w.client))
			}
		}
		if row.Holder != node.None || len(row.Queue) > 0 {
			locks = append(locks, row)
		}
	}
	var d []node.ID
	for _, mb := range m.detect {
		d = append(d, mb.id)
	}
	return map[string]any{"id": m.cfg.ID, "algo": m.cfg.Algo.String(), "token": m.state.String(), "count": m.count,
		"holder": m.holder.id, "detection_set": d, "k": m.k, "locks": locks,
		"down": down(m.alive, m.ring, m.cfg.ID, m.started, m.now)}
}
