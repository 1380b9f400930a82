// Package termination detects that a distributed computation has ended:
// every process passive and no work message in flight. A marker circulates
// round the ring of processes (Misra, "Detecting termination of distributed
// computations using markers", as Arantes and Sopena §III recall it); it is
// made tolerant to crashes by the k-backup scheme of Arantes and Sopena,
// "A fault tolerant token ring plug-in" §II (Fig. 2): each emission of the
// marker goes to the k+1 next processes, the first holding it and the
// others keeping a backup copy that they use when every process between the
// holder and themselves has crashed.
//
// The rules (the colours are Dijkstra, Feijen and van Gasteren's, which
// keep the ring detection sound whatever the order of delivery):
//
//   - A process is active or passive. Only an active process sends work;
//     a passive one becomes active when work arrives. Work is acknowledged,
//     so that a sender knows when none of its work is in flight.
//   - A process that sends work turns black.
//   - The marker's holder keeps it while it is active or has work not yet
//     acknowledged. Then it adds itself to the marker's streak of white
//     processes, or empties the streak if it is black, turns white and
//     passes the marker on.
//   - When the streak and the processes known to have crashed make up the
//     whole ring, the holder announces termination to everyone.
//   - Using a backup (a crash) empties the streak and adds the crashed
//     processes to the marker's list (§II "UpdateToken": the regenerated
//     token's information is restored).
//
// Like every protocol in the tree, Machine is a pure state machine: no
// sockets, clocks or goroutines.
package termination

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Config configures a Machine.
type Config struct {
	ID      node.ID
	Peers   []node.ID // every process, this one included; ring order is ascending ID
	Backups int       // k: backup copies of the marker; crashes of k consecutive processes are tolerated
	// Active: the process starts active (it has work of its own).
	Active    bool
	Heartbeat time.Duration // probe period of a backup; default 50ms
	Timeout   time.Duration // silence after which a probed process, or unacknowledged work, counts as crashed; default 4·Heartbeat

	bug bug // tests only
}

type bug uint8

const (
	bugNone bug = iota
	// bugNoColour: sending work does not blacken the sender.
	bugNoColour
	// bugActOnDup: every copy of a work message is taken as new work.
	bugActOnDup
)

// Machine is one process's termination detector.
type Machine struct {
	cfg   Config
	peers []node.ID
	index map[node.ID]int

	active  bool
	black   bool
	seq     uint64
	unacked map[uint64]sent
	recv    map[node.ID]*dedup // work seen, per sender

	// The marker (Fig. 2).
	count   uint64    // newest emission seen
	holding bool      // REAL
	det     []node.ID // BACKUP: the processes between the holder and this one
	streak  []node.ID // held marker: consecutive white processes
	crashed []node.ID // held marker: processes known to have crashed
	faulty  map[node.ID]bool
	watched map[node.ID]*watch

	// The latest marker emission, resent to the targets that have not
	// acknowledged it.
	emit      Msg
	emitAt    time.Time
	emitNext  time.Time
	emitUnack map[node.ID]bool

	done      bool
	doneMsg   Msg
	doneAt    time.Time
	doneNext  time.Time
	doneUnack map[node.ID]bool
	settled   bool
	out       []node.Envelope[Msg]
	events    []node.Event
}

type sent struct {
	to       node.ID
	at, next time.Time // first sent, next resend
}

// dedup: the work sequence numbers seen from one sender, kept bounded as
// the highest contiguous one and the few seen above it.
type dedup struct {
	low   uint64
	above map[uint64]bool
}

const maxAbove = 256

// first records seq and reports whether it is new.
func (d *dedup) first(seq uint64) bool {
	if seq <= d.low || d.above[seq] {
		return false
	}
	d.above[seq] = true
	if len(d.above) > maxAbove {
		// The lowest gap belongs to work its sender has given up on
		// (Timeout: it took this process for crashed); skip it.
		d.low = slices.Min(slices.Collect(maps.Keys(d.above))) - 1
	}
	for d.above[d.low+1] {
		delete(d.above, d.low+1)
		d.low++
	}
	return true
}

type watch struct{ heard, probe time.Time }

// WorkEvent: work arrived from From; the process is active.
type WorkEvent struct {
	Event string  `json:"event"` // "work"
	From  node.ID `json:"from"`
}

func (WorkEvent) Kind() string     { return "work" }
func (e WorkEvent) String() string { return fmt.Sprintf("work from %d", e.From) }

// TerminatedEvent: the computation has ended.
type TerminatedEvent struct {
	Event   string    `json:"event"` // "terminated"
	Crashed []node.ID `json:"crashed"`
}

func (TerminatedEvent) Kind() string { return "terminated" }
func (e TerminatedEvent) String() string {
	return fmt.Sprintf("terminated (crashed %v)", e.Crashed)
}

// SettledEvent: termination was announced and, at the announcer, every
// live process acknowledged the announcement (or stayed silent for
// Timeout); the process may exit. It follows TerminatedEvent.
type SettledEvent struct {
	Event string `json:"event"` // "settled"
}

func (SettledEvent) Kind() string   { return "settled" }
func (SettledEvent) String() string { return "settled" }

// New returns a Machine. The process with the lowest ID holds the marker
// first, and the k after it a backup (Fig. 2, Initialisation).
func New(cfg Config) (*Machine, error) {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 50 * time.Millisecond
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 4 * cfg.Heartbeat
	}
	peers := slices.Clone(cfg.Peers)
	slices.Sort(peers)
	peers = slices.Compact(peers)
	switch {
	case cfg.ID == node.None:
		return nil, errors.New("termination: ID must not be 0")
	case !slices.Contains(peers, cfg.ID):
		return nil, fmt.Errorf("termination: own id %d is not in the peer list", cfg.ID)
	case cfg.Backups < 0 || cfg.Backups >= len(peers) && len(peers) > 1:
		return nil, fmt.Errorf("termination: backups %d: want 0 to %d", cfg.Backups, len(peers)-1)
	case cfg.Timeout < 2*cfg.Heartbeat:
		return nil, fmt.Errorf("termination: timeout %v below twice the heartbeat %v", cfg.Timeout, cfg.Heartbeat)
	}
	m := &Machine{cfg: cfg, peers: peers, index: map[node.ID]int{}, active: cfg.Active,
		unacked: map[uint64]sent{}, recv: map[node.ID]*dedup{}, faulty: map[node.ID]bool{}, watched: map[node.ID]*watch{}}
	for i, p := range peers {
		m.index[p] = i
	}
	i := m.index[cfg.ID]
	switch {
	case i == 0:
		m.holding = true
	case i <= cfg.Backups:
		m.det = slices.Clone(peers[:i])
	}
	return m, nil
}

// Active reports whether the process is active.
func (m *Machine) Active() bool { return m.active }

// Holding reports whether this process holds the marker.
func (m *Machine) Holding() bool { return m.holding }

// Terminated reports whether termination was announced to this process.
func (m *Machine) Terminated() bool { return m.done }

// Settled reports whether the announcement is settled: every live
// process acknowledged it, or this process only received it.
func (m *Machine) Settled() bool { return m.settled }

// Step implements node.Machine.
func (m *Machine) Step(now time.Time, in node.Envelope[Msg]) error {
	msg := in.Msg
	if in.From == m.cfg.ID {
		switch msg.Type {
		case MsgSend:
			if !m.active {
				return errors.New("termination: a passive process sends no work")
			}
			if _, ok := m.index[msg.To]; !ok || msg.To == m.cfg.ID {
				return fmt.Errorf("termination: work for %d, not another member", msg.To)
			}
			m.seq++
			m.unacked[m.seq] = sent{msg.To, now, now.Add(m.cfg.Heartbeat)}
			if m.cfg.bug != bugNoColour {
				m.black = true
			}
			m.send(msg.To, Msg{Type: MsgWork, Seq: m.seq})
		case MsgIdle:
			m.active = false
		default:
			return fmt.Errorf("termination: %v is not a local request", msg.Type)
		}
		m.pass(now)
		return nil
	}
	if _, ok := m.index[in.From]; !ok {
		return fmt.Errorf("termination: message from %d, not a member", in.From)
	}
	delete(m.faulty, in.From)
	if w := m.watched[in.From]; w != nil {
		w.heard = now
	}
	switch msg.Type {
	case MsgWork:
		// Every copy is acknowledged; only the first is work.
		m.send(in.From, Msg{Type: MsgWorkAck, Seq: msg.Seq})
		d := m.recv[in.From]
		if d == nil {
			d = &dedup{above: map[uint64]bool{}}
			m.recv[in.From] = d
		}
		if !d.first(msg.Seq) && m.cfg.bug != bugActOnDup {
			break
		}
		if !m.done {
			m.active = true
			m.events = append(m.events, WorkEvent{Event: "work", From: in.From})
		}
	case MsgWorkAck:
		delete(m.unacked, msg.Seq)
	case MsgMarker:
		m.send(in.From, Msg{Type: MsgMarkerAck, Seq: msg.Seq})
		m.takeMarker(now, msg)
	case MsgMarkerAck:
		if msg.Seq == m.emit.Seq {
			delete(m.emitUnack, in.From)
		}
	case MsgProbe:
		m.send(in.From, Msg{Type: MsgProbeAck})
	case MsgProbeAck:
	case MsgDone:
		m.send(in.From, Msg{Type: MsgDoneAck})
		m.announce(msg.Members)
	case MsgDoneAck:
		delete(m.doneUnack, in.From)
		m.settle()
	default:
		return fmt.Errorf("termination: unexpected %v from %d", msg.Type, in.From)
	}
	m.pass(now)
	return nil
}

// takeMarker is SafeReceiveToken (Fig. 2, lines 23–35).
func (m *Machine) takeMarker(now time.Time, msg Msg) {
	if msg.Seq <= m.count {
		return
	}
	m.count = max(m.count, msg.Seq)
	m.streak, m.crashed = slices.Clone(msg.White), slices.Clone(msg.Members[:msg.NCrashed])
	targets := msg.Members[msg.NCrashed:]
	var det []node.ID
	for _, p := range targets {
		if p == m.cfg.ID {
			break
		}
		det = append(det, p)
	}
	if len(det) == len(targets) {
		return // not for us
	}
	if len(det) == 0 {
		m.holding, m.det = true, nil
		return
	}
	m.holding, m.det = false, det
	for _, p := range det {
		if !m.faulty[p] && m.watched[p] == nil {
			m.watched[p] = &watch{heard: now, probe: now}
		}
	}
	m.useBackup()
}

// useBackup (Fig. 2, lines 36–43): every process between the holder and
// this one has crashed; this one holds the marker.
func (m *Machine) useBackup() {
	if m.det == nil {
		return
	}
	for _, p := range m.det {
		if !m.faulty[p] {
			return
		}
	}
	m.count += uint64(len(m.det))
	for _, p := range m.det {
		if !slices.Contains(m.crashed, p) {
			m.crashed = append(m.crashed, p)
		}
	}
	m.streak = nil // a crash: the streak starts again
	m.holding, m.det = true, nil
}

// idle: passive with no work in flight to a process not known crashed.
func (m *Machine) idle() bool {
	return !m.active && len(m.unacked) == 0
}

// pass: the holder, once idle, records itself and passes the marker on
// (SafeSendToken, Fig. 2 lines 16–22), or announces termination.
func (m *Machine) pass(now time.Time) {
	if !m.holding || m.done || !m.idle() {
		return
	}
	if m.black {
		m.streak = nil
	} else if !slices.Contains(m.streak, m.cfg.ID) {
		m.streak = append(m.streak, m.cfg.ID)
	}
	m.black = false
	if len(m.streak)+len(m.crashed) >= len(m.peers) {
		m.doneMsg = Msg{Type: MsgDone, Members: slices.Clone(m.crashed)}
		m.doneAt, m.doneNext = now, now.Add(m.cfg.Heartbeat)
		m.doneUnack = map[node.ID]bool{}
		for _, p := range m.peers {
			if p != m.cfg.ID && !slices.Contains(m.crashed, p) {
				m.doneUnack[p] = true
				m.send(p, m.doneMsg)
			}
		}
		m.announce(m.crashed)
		return
	}
	var to []node.ID
	i := m.index[m.cfg.ID]
	for j := 1; j < len(m.peers) && len(to) <= m.cfg.Backups; j++ {
		p := m.peers[(i+j)%len(m.peers)]
		if !slices.Contains(m.crashed, p) {
			to = append(to, p)
		}
	}
	m.holding = false
	m.count++
	out := Msg{Type: MsgMarker, Seq: m.count, White: m.streak, NCrashed: len(m.crashed),
		Members: append(slices.Clone(m.crashed), to...)}
	m.emit, m.emitAt, m.emitNext = out, now, now.Add(m.cfg.Heartbeat)
	m.emitUnack = map[node.ID]bool{}
	for _, p := range to {
		m.emitUnack[p] = true
		m.send(p, out)
	}
}

// settle emits SettledEvent once no acknowledgement of the announcement
// is awaited.
func (m *Machine) settle() {
	if m.done && !m.settled && len(m.doneUnack) == 0 {
		m.settled = true
		m.events = append(m.events, SettledEvent{Event: "settled"})
	}
}

// resend: the paper assumes reliable channels (Arantes and Sopena §II);
// over datagrams, work, the latest marker emission and the announcement
// go again every Heartbeat to whoever has not acknowledged them, until
// Timeout takes the silent one for crashed.
func (m *Machine) resend(now time.Time) {
	seqs := slices.Sorted(maps.Keys(m.unacked))
	for _, s := range seqs {
		w := m.unacked[s]
		switch {
		case now.Sub(w.at) >= m.cfg.Timeout:
			delete(m.unacked, s)
		case !w.next.After(now):
			m.send(w.to, Msg{Type: MsgWork, Seq: s})
			w.next = now.Add(m.cfg.Heartbeat)
			m.unacked[s] = w
		}
	}
	if len(m.emitUnack) > 0 {
		if now.Sub(m.emitAt) >= m.cfg.Timeout {
			m.emitUnack = nil
		} else if !m.emitNext.After(now) {
			for _, p := range slices.Sorted(maps.Keys(m.emitUnack)) {
				m.send(p, m.emit)
			}
			m.emitNext = now.Add(m.cfg.Heartbeat)
		}
	}
	if len(m.doneUnack) > 0 {
		if now.Sub(m.doneAt) >= m.cfg.Timeout {
			m.doneUnack = nil
		} else if !m.doneNext.After(now) {
			for _, p := range slices.Sorted(maps.Keys(m.doneUnack)) {
				m.send(p, m.doneMsg)
			}
			m.doneNext = now.Add(m.cfg.Heartbeat)
		}
	}
	m.settle()
}

func (m *Machine) announce(crashed []node.ID) {
	if m.done {
		return
	}
	m.done = true
	m.events = append(m.events, TerminatedEvent{Event: "terminated", Crashed: append([]node.ID{}, crashed...)})
	m.settle()
}

func (m *Machine) send(to node.ID, msg Msg) {
	m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: to, Msg: msg})
}

// Tick implements node.Machine: backups probe the processes they watch
// and suspect the silent ones; work unacknowledged for Timeout went to a
// crashed process.
func (m *Machine) Tick(now time.Time) {
	m.resend(now)
	for _, p := range m.det {
		if !m.faulty[p] && m.watched[p] == nil {
			m.watched[p] = &watch{heard: now, probe: now}
		}
	}
	ps := make([]node.ID, 0, len(m.watched))
	for p := range m.watched {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		w := m.watched[p]
		switch {
		case !slices.Contains(m.det, p) || m.done:
			delete(m.watched, p)
		case now.Sub(w.heard) >= m.cfg.Timeout:
			delete(m.watched, p)
			m.faulty[p] = true
		case !w.probe.After(now):
			m.send(p, Msg{Type: MsgProbe})
			w.probe = now.Add(m.cfg.Heartbeat)
		}
	}
	m.useBackup()
	m.pass(now)
}

// Ready implements node.Machine.
func (m *Machine) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: m.out, Events: m.events}
	m.out, m.events = nil, nil
	wake := func(t time.Time) {
		if r.Wake.IsZero() || t.Before(r.Wake) {
			r.Wake = t
		}
	}
	for _, w := range m.watched {
		wake(w.probe)
		wake(w.heard.Add(m.cfg.Timeout))
	}
	for _, s := range m.unacked {
		wake(s.next)
		wake(s.at.Add(m.cfg.Timeout))
	}
	if len(m.emitUnack) > 0 {
		wake(m.emitNext)
	}
	if len(m.doneUnack) > 0 {
		wake(m.doneNext)
	}
	return r
}
