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

	// The marker (Fig. 2).
	count   uint64    // newest emission seen
	holding bool      // REAL
	det     []node.ID // BACKUP: the processes between the holder and this one
	streak  []node.ID // held marker: consecutive white processes
	crashed []node.ID // held marker: processes known to have crashed
	faulty  map[node.ID]bool
	watched map[node.ID]*watch

	done   bool
	out    []node.Envelope[Msg]
	events []node.Event
}

type sent struct {
	to node.ID
	at time.Time
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
		unacked: map[uint64]sent{}, faulty: map[node.ID]bool{}, watched: map[node.ID]*watch{}}
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
			m.unacked[m.seq] = sent{msg.To, now}
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
		m.send(in.From, Msg{Type: MsgWorkAck, Seq: msg.Seq})
		if !m.done {
			m.active = true
			m.events = append(m.events, WorkEvent{Event: "work", From: in.From})
		}
	case MsgWorkAck:
		delete(m.unacked, msg.Seq)
	case MsgMarker:
		m.takeMarker(now, msg)
	case MsgProbe:
		m.send(in.From, Msg{Type: MsgProbeAck})
	case MsgProbeAck:
	case MsgDone:
		m.announce(msg.Members)
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
		m.announce(m.crashed)
		for _, p := range m.peers {
			if p != m.cfg.ID && !slices.Contains(m.crashed, p) {
				m.send(p, Msg{Type: MsgDone, Members: m.crashed})
			}
		}
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
	for _, p := range to {
		m.send(p, out)
	}
}

func (m *Machine) announce(crashed []node.ID) {
	if m.done {
		return
	}
	m.done = true
	m.events = append(m.events, TerminatedEvent{Event: "terminated", Crashed: append([]node.ID{}, crashed...)})
}

func (m *Machine) send(to node.ID, msg Msg) {
	m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: to, Msg: msg})
}

// Tick implements node.Machine: backups probe the processes they watch
// and suspect the silent ones; work unacknowledged for Timeout went to a
// crashed process.
func (m *Machine) Tick(now time.Time) {
	for s, w := range m.unacked {
		if now.Sub(w.at) >= m.cfg.Timeout {
			delete(m.unacked, s)
		}
	}
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
		wake(s.at.Add(m.cfg.Timeout))
	}
	return r
}
