package lockd

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/metrics"
	"github.com/roundtable-go/roundtable/pkg/mutex"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// daemon routes events between the machine's driver and the control
// connections.
type daemon struct {
	drv   *driver.Driver[mutex.Msg]
	m     mutex.Machine
	lease time.Duration
	log   interface {
		Info(string, ...any)
		Warn(string, ...any)
	}

	stateFile string
	persisted uint64

	// For status: asking the other members (see status).
	member *cli.Common
	askFor time.Duration

	mu       sync.Mutex
	nextID   uint64
	clients  map[uint64]*cli.Conn
	names    map[uint64]map[string]bool // what each client holds or waits for
	watchers map[*cli.Conn]bool

	// Cluster-wide watch (see askForEvents): this member's watchers of
	// every member's events, the members that asked for this member's
	// events and until when, and events other members sent.
	self        node.ID
	allWatchers map[*cli.Conn]bool
	subscribers map[node.ID]time.Time
	subscribe   chan struct{} // a first cluster watcher: ask the others now
	remote      chan Reply

	// --metrics: from a client's acquire to its grant, and from the grant
	// to the release or loss, keyed by client and lock (nil: no --metrics).
	waits, holds *metrics.Interval
}

// Control frames lockd sends between members (wire.FamilyControl, from
// driver.ControlTool up). Append only.
const (
	// ctlWatch asks the receiver to send its clients' events to the
	// sender for the next lease; repeated every quarter lease while the
	// sender has a cluster-wide watcher.
	ctlWatch = driver.ControlTool + iota
	// ctlEvent is one event of the sender's clients: a reply line.
	ctlEvent
)

// Config is what a daemon needs beyond its member and machine.
type Config struct {
	Lease     time.Duration // the machine's grant lease
	StateFile string        // --state-file: where the growing counter is kept ("" none)
	Persisted uint64        // the value read from StateFile at start
	Socket    string        // the control socket's path
}

// Serve runs the daemon: the member's machine on its transport, local
// clients on the control socket, until a signal (nil) or the transport
// fails (69).
func Serve(mb *cli.Member, m mutex.Machine, cfg Config) error {
	// One P unless GOMAXPROCS says otherwise: the daemon's work is one
	// state machine on one goroutine, and with more Ps every hand-off
	// between the socket, session and driver goroutines wakes another
	// thread (docs/performance.md).
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	ln, err := cli.ListenControl(Tool, cfg.Socket)
	if err != nil {
		return err
	}
	defer os.Remove(cfg.Socket)
	defer ln.Close()
	d := &daemon{m: m, lease: cfg.Lease, log: mb.Log, stateFile: cfg.StateFile, persisted: cfg.Persisted,
		clients: map[uint64]*cli.Conn{}, names: map[uint64]map[string]bool{}, watchers: map[*cli.Conn]bool{},
		member: mb.Common, askFor: min(cfg.Lease/4, 250*time.Millisecond),
		self: mb.ID, allWatchers: map[*cli.Conn]bool{}, subscribers: map[node.ID]time.Time{},
		subscribe: make(chan struct{}, 1), remote: make(chan Reply, 1024),
		waits: mb.Metrics.Interval("roundtable_lockd_acquire_wait_seconds"), holds: mb.Metrics.Interval("roundtable_lockd_hold_seconds")}
	// Under systemd, READY=1 once this member can grant (a quorum), as
	// /readyz says, not merely once it listens: a unit ordered After=
	// lockd.service then finds locks it can take.
	mb.NotifyReadyWhen = CanGrant
	var run *cli.Running
	d.drv, run, err = cli.StartMachineWith[mutex.Msg](mb, m, mutex.Codec{}, driver.Config{Control: d.control}, "lease", cfg.Lease, "socket", cfg.Socket)
	if err != nil {
		return err
	}
	defer run.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// No client may hold the daemon up: one that stops reading is cut off
	// once 4096 lines wait for it (its locks are then released).
	go cli.Accept(ln, 4096, func(cn *cli.Conn) { d.session(ctx, cn) })
	go d.keepalive(ctx)
	lastTerm := cfg.Persisted
	for {
		select {
		case ev := <-run.Events:
			if ce, ok := ev.(mutex.CoordinatorEvent); ok {
				mb.Out.Event(ev)
				if ce.Term > lastTerm {
					lastTerm = ce.Term
					if err := cli.WriteUint(cfg.StateFile, ce.Term); err != nil {
						mb.Log.Warn("cannot persist term", "err", err)
					}
				}
			}
			d.dispatch(ev)
		case r := <-d.remote:
			d.toAllWatchers(r)
		case err := <-run.Done:
			return cli.Failed(err)
		case s := <-run.Signals:
			mb.Log.Info("signal: stopping", "signal", s)
			return nil
		}
	}
}

// CanGrant reports whether a member whose machine status is st can grant
// locks: a central or voting member with a quorum (its "quorum"), a
// Ricart–Agrawala member with every other member up (each must answer), a
// token-ring member always (the ring regenerates a lost token).
func CanGrant(st map[string]any) bool {
	if q, ok := st["quorum"].(bool); ok {
		return q
	}
	if down, _ := st["down"].([]any); st["algo"] == mutex.RicartAgrawala.String() && len(down) > 0 {
		return false
	}
	return true
}

// session serves one control connection: one client.
func (d *daemon) session(ctx context.Context, c *cli.Conn) {
	d.mu.Lock()
	d.nextID++
	id := d.nextID
	d.clients[id] = c
	d.names[id] = map[string]bool{}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		names := d.names[id]
		delete(d.clients, id)
		delete(d.names, id)
		delete(d.watchers, c)
		delete(d.allWatchers, c)
		d.mu.Unlock()
		// The client is gone: release whatever it held or waited for.
		for name := range names {
			_ = d.drv.Request(context.Background(), mutex.Msg{Type: mutex.LocalRelease, Name: name, Client: id})
		}
		c.Close()
	}()
	for {
		var req Request
		if err := c.Next(&req); err != nil {
			return
		}
		if req.Op == "acquire" || req.Op == "release" {
			// The command-line clients check names; a client of its own
			// that sends a bad one gets an error, and nothing reaches the
			// protocol or the members.
			if err := ValidName(req.Name); err != nil {
				c.Send(Reply{Event: "error", Name: req.Name, Error: err.Error()})
				continue
			}
		}
		switch req.Op {
		case "acquire":
			d.mu.Lock()
			d.names[id][req.Name] = true
			d.mu.Unlock()
			d.waits.Begin(spanKey(id, req.Name))
			err := d.drv.Request(ctx, mutex.Msg{Type: mutex.LocalAcquire, Name: req.Name, Client: id, NonBlock: req.NonBlock})
			if err != nil {
				c.Send(Reply{Event: "error", Name: req.Name, Error: err.Error()})
			}
		case "release":
			d.mu.Lock()
			delete(d.names[id], req.Name)
			d.mu.Unlock()
			_ = d.drv.Request(ctx, mutex.Msg{Type: mutex.LocalRelease, Name: req.Name, Client: id})
		case "status":
			c.Send(Reply{Event: "status", Status: d.status(ctx)})
		case "watch":
			d.mu.Lock()
			d.watchers[c] = true
			// Sent under the lock, before any event can reach the watcher:
			// a watcher that has read it misses nothing afterwards.
			c.Send(Reply{Event: watching})
			d.mu.Unlock()
		case "watch-cluster":
			d.mu.Lock()
			d.allWatchers[c] = true
			c.Send(Reply{Event: watching})
			d.mu.Unlock()
			select {
			case d.subscribe <- struct{}{}:
			default:
			}
		default:
			c.Send(Reply{Event: "error", Error: fmt.Sprintf("unknown op %q", req.Op)})
		}
	}
}

// status is the member's Status, with the lock table of the whole
// cluster where the member's own would be partial or old:
//
//   - central: a follower knows the table only from the coordinator's
//     pings, a quarter lease apart, so a script that ran `lockd status`
//     right after its own `lockd run` could be shown the lock still held.
//     It asks the coordinator for its table instead, and keeps the pinged
//     copy when no answer comes ("locks_from": "last ping").
//   - the other algorithms: each member knows only its own clients'
//     holdings and waits, so the member asks every other member and joins
//     their rows with mutex.MergeLocks, one per lock ("answered": the
//     members whose clients are listed, itself included; "unanswered":
//     those whose are missing; "down": those of them the failure detector
//     holds for dead, which are not asked).
//
// The asking is the control-family status query `elect status` uses, from
// a throw-away client ID, and waits a quarter lease at most (250 ms).
func (d *daemon) status(ctx context.Context) json.RawMessage {
	var st any
	_ = d.drv.Do(ctx, func() { st = d.m.Status() })
	m, ok := st.(map[string]any)
	if !ok {
		b, _ := json.Marshal(st)
		return b
	}
	self, _ := m["id"].(node.ID)
	m["frames"] = d.drv.Stats() // frames sent, accepted and dropped by reason
	if m["algo"] == mutex.Central.String() {
		coord, _ := m["coordinator"].(node.ID)
		if m["leading"] == false && coord != node.None {
			m["locks_from"] = "last ping"
			var cs struct {
				Leading bool            `json:"leading"`
				Locks   json.RawMessage `json:"locks"`
			}
			if r, ok := d.askMembers(ctx, []node.ID{coord})[coord]; ok && json.Unmarshal(r, &cs) == nil && cs.Leading && len(cs.Locks) > 0 {
				m["locks"], m["locks_from"] = cs.Locks, "coordinator"
			}
		} else if m["leading"] == true {
			m["locks_from"] = "coordinator"
		}
	} else {
		// Members the failure detector holds for dead are not asked: the
		// answer would not come, and the query would wait its full time.
		down, _ := m["down"].([]node.ID)
		var others []node.ID
		for id := range d.member.Peers {
			if id != self && !slices.Contains(down, id) {
				others = append(others, id)
			}
		}
		slices.Sort(others)
		answers := d.askMembers(ctx, others)
		rows, _ := m["locks"].([]mutex.LockStatus)
		from, unanswered := []node.ID{self}, []node.ID{}
		for _, id := range others {
			var ms struct {
				Locks []mutex.LockStatus `json:"locks"`
			}
			if r, ok := answers[id]; ok && json.Unmarshal(r, &ms) == nil {
				rows = append(rows, ms.Locks...)
				from = append(from, id)
			} else {
				unanswered = append(unanswered, id)
			}
		}
		unanswered = append(unanswered, down...)
		slices.Sort(from)
		slices.Sort(unanswered)
		name, _ := m["algo"].(string)
		algo, _ := mutex.ParseAlgo(name)
		ring := slices.Sorted(maps.Keys(d.member.Peers))
		m["locks"], m["answered"], m["unanswered"] = mutex.MergeLocks(algo, ring, rows), from, unanswered
	}
	b, _ := json.Marshal(st)
	return b
}

// askMembers asks the members ids for their machines' status and returns
// the answers that came within d.askFor.
func (d *daemon) askMembers(ctx context.Context, ids []node.ID) map[node.ID]json.RawMessage {
	out := map[node.ID]json.RawMessage{}
	replies, _ := d.member.Query(ctx, ids, d.askFor)
	for m, r := range replies {
		out[m] = r.Status
	}
	return out
}

// spanKey names one client's wait for, or hold of, one lock.
func spanKey(client uint64, name string) string { return fmt.Sprintf("%d/%s", client, name) }

// dispatch sends a machine event to the client it concerns and to every
// watcher.
func (d *daemon) dispatch(ev node.Event) {
	var r Reply
	var client uint64
	switch e := ev.(type) {
	case mutex.GrantEvent:
		// The lease runs from the machine's grant, not from now: the event
		// may have waited in the queue to this goroutine.
		at := e.At
		if at.IsZero() {
			at = time.Now()
		}
		r, client = Reply{Event: "acquired", Name: e.Name, Token: e.Token, UntilNS: at.Add(e.Valid).UnixNano(), AtNS: at.UnixNano()}, e.Client
	case mutex.BusyEvent:
		r, client = Reply{Event: "busy", Name: e.Name}, e.Client
	case mutex.UnavailableEvent:
		r, client = Reply{Event: "unavailable", Name: e.Name, Reason: e.Reason}, e.Client
	case mutex.LostEvent:
		r, client = Reply{Event: "lost", Name: e.Name, Token: e.Token, Reason: e.Reason}, e.Client
	case mutex.ReleasedEvent:
		r, client = Reply{Event: "released", Name: e.Name, Token: e.Token}, e.Client
	case mutex.CoordinatorEvent:
		r = Reply{Event: "coordinator", Coordinator: uint32(e.Coordinator), Term: e.Term}
	default:
		return
	}
	switch key := spanKey(client, r.Name); r.Event {
	case "acquired":
		d.waits.End(key)
		d.holds.Begin(key)
	case "busy", "unavailable":
		d.waits.Drop(key)
	case "lost", "released":
		d.waits.Drop(key)
		d.holds.End(key)
	}
	d.mu.Lock()
	if r.Event == "busy" || r.Event == "lost" || r.Event == "unavailable" {
		if names := d.names[client]; names != nil {
			delete(names, r.Name)
		}
	}
	// A release is not answered: the client's requests are taken in
	// order, so nothing it sends later can overtake it, and the write
	// (a system call per release) bought nothing. Watchers see it.
	target := d.clients[client]
	if r.Event == "released" {
		target = nil
	}
	var watchers []*cli.Conn
	for w := range d.watchers {
		watchers = append(watchers, w)
	}
	// Cluster-wide watchers here and members that asked for these events
	// (none, on the hot path, unless someone runs lockd watch --cluster).
	var all []*cli.Conn
	var subs []node.ID
	if r.Event != "coordinator" {
		for w := range d.allWatchers {
			all = append(all, w)
		}
		if len(d.subscribers) > 0 {
			now := time.Now()
			for id, until := range d.subscribers {
				if now.Before(until) {
					subs = append(subs, id)
				} else {
					delete(d.subscribers, id)
				}
			}
		}
	}
	d.mu.Unlock()
	r.Client = client
	if target != nil {
		target.Send(r)
	}
	for _, w := range watchers {
		w.Send(r)
	}
	r.Node = uint32(d.self)
	for _, w := range all {
		w.Send(r)
	}
	if len(subs) > 0 {
		line, _ := json.Marshal(r)
		for _, id := range subs {
			_ = d.drv.SendControl(id, ctlEvent, line)
		}
	}
}

// toAllWatchers sends one member's event to this member's cluster-wide
// watchers.
func (d *daemon) toAllWatchers(r Reply) {
	d.mu.Lock()
	var ws []*cli.Conn
	for w := range d.allWatchers {
		ws = append(ws, w)
	}
	d.mu.Unlock()
	for _, w := range ws {
		w.Send(r)
	}
}

// control takes the members' watch frames, on the driver goroutine: it
// must not block, so events for the watchers go through d.remote to the
// main loop (dropped when 1,024 are already waiting: a watch is a view,
// not a log). Frames from a non-member are ignored.
func (d *daemon) control(from node.ID, typ uint8, body []byte) {
	if _, member := d.member.Peers[from]; !member || from == d.self {
		return
	}
	switch typ {
	case ctlWatch:
		d.mu.Lock()
		d.subscribers[from] = time.Now().Add(d.lease)
		d.mu.Unlock()
	case ctlEvent:
		var r Reply
		if json.Unmarshal(body, &r) != nil || ValidName(r.Name) != nil && r.Name != "" {
			return
		}
		r.Node = uint32(from)
		select {
		case d.remote <- r:
		default:
		}
	}
}

// askForEvents asks every other member for its clients' events, while
// this member has a cluster-wide watcher: keepalive calls it every eighth of a
// lease, and at once when the first such watcher arrives. A member forgets
// a request after a lease, so the events stop soon after the last watcher
// leaves. The events travel as datagrams: a lost one is missing from the
// watch.
func (d *daemon) askForEvents() {
	d.mu.Lock()
	n := len(d.allWatchers)
	d.mu.Unlock()
	if n == 0 {
		return
	}
	for id := range d.member.Peers {
		if id != d.self {
			_ = d.drv.SendControl(id, ctlWatch, nil)
		}
	}
}

// keepalive tells each holding client how much longer its lease is good
// for, every eighth of a lease. A client that stops hearing this (the daemon
// is paused or dead) gives the lock up on its own when that time is out.
// It also renews this member's requests for the others' events.
func (d *daemon) keepalive(ctx context.Context) {
	// An eighth of a lease: a holder's lease is extended on the member an
	// eighth of a lease apart, and across a coordinator's failover the
	// client must hear of the new extension before the old one runs out.
	t := time.NewTicker(d.lease / 8)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.subscribe:
			d.askForEvents()
			continue
		case <-t.C:
		}
		d.askForEvents()
		var holds []mutex.Holding
		var now time.Time
		var lamport uint64
		if d.drv.Do(ctx, func() {
			now = time.Now()
			holds = d.m.Holdings(now)
			if c, ok := d.m.(interface{ Clock() uint64 }); ok {
				lamport = c.Clock()
			}
		}) != nil {
			return
		}
		if lamport > d.persisted {
			// Ricart–Agrawala: keep the Lamport clock on stable storage
			// so a restart's tokens come after this life's.
			if err := cli.WriteUint(d.stateFile, lamport); err == nil {
				d.persisted = lamport
			}
		}
		byClient := map[uint64][]mutex.Holding{}
		for _, h := range holds {
			byClient[h.Client] = append(byClient[h.Client], h)
		}
		d.mu.Lock()
		for client, hs := range byClient {
			if c := d.clients[client]; c != nil {
				c.Send(validReply(hs, now, d.lease))
			}
		}
		d.mu.Unlock()
	}
}

// maxEach bounds the locks a "valid" reply lists with their own lease
// end: 64 names of up to 255 bytes keep the line near 20 KB.
const maxEach = 64

// validReply is the "valid" line for one client's holdings hs, seen at
// now: every lock is good until its own lease's end on the member.
//
// One line per client, not per lock (a client may hold thousands, and a
// line goes every eighth of a lease): until_ns is the earliest end among
// the locks whose renewal is on time (ending at least half a lease from
// now; the machine renews every eighth of a lease), and each lock whose
// renewal lags is listed in "each" with its own, earlier, end, so that one
// late renewal ends at most its own lock, never the others'. Past maxEach
// lagging locks, the earliest maxEach are listed and until_ns is the
// earliest end of the rest: never later than any unlisted lock's end.
func validReply(hs []mutex.Holding, now time.Time, lease time.Duration) Reply {
	cut := now.Add(lease / 2)
	var lag, rest []mutex.Holding
	for _, h := range hs {
		if h.Until.Before(cut) {
			lag = append(lag, h)
		} else {
			rest = append(rest, h)
		}
	}
	if len(lag) > maxEach {
		slices.SortFunc(lag, func(a, b mutex.Holding) int { return a.Until.Compare(b.Until) })
		rest = append(rest, lag[maxEach:]...)
		lag = lag[:maxEach]
	}
	r := Reply{Event: "valid", AtNS: now.UnixNano()}
	for _, h := range lag {
		r.Each = append(r.Each, LockUntil{Name: h.Name, UntilNS: h.Until.UnixNano()})
	}
	var until time.Time
	for _, h := range rest {
		if until.IsZero() || h.Until.Before(until) {
			until = h.Until
		}
	}
	if !until.IsZero() {
		r.UntilNS = until.UnixNano()
	}
	return r
}
