package ticketd

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/ticket"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Config is what a daemon needs beyond its member.
type Config struct {
	Socket    string        // the control socket's path
	Tickets   int           // --tickets: found a pool of this many (no Join), or check the pool's size
	Join      []string      // --join: members' addresses
	K         int           // §4's k
	Round     time.Duration // §4's round
	KillGrace time.Duration // the longest a client takes to stop its command (SIGTERM, then SIGKILL)
	StateFile string        // --state-file: the highest epoch handed out, for a pool founded again
	Floor     uint64        // read from StateFile
	// JoinTimeout bounds how long a new member looks for the pool through
	// Join before it gives up (exit 69).
	JoinTimeout time.Duration
}

// aloneLease is how long a grant is good for, without renewal, when this
// member is alone in the core (nobody can exclude it; the lease still
// stops the command if the daemon dies or is stopped).
const aloneLease = time.Second

// epochReserve: the state file is written once per this many epochs, with
// the top of the reserve, so that a lend does not wait for a disk.
const epochReserve = 1024

// session is one client connection.
type session struct {
	cn       *cli.Conn
	wants    bool      // waiting for a ticket
	nonblock bool      // give up at busyAt
	busyAt   time.Time // nonblock: answer busy then
	holds    bool
	epoch    uint64
	stopping bool // told its ticket is lost; its command is being stopped
}

type clientMsg struct {
	s    *session
	req  Request
	gone bool
}

type daemon struct {
	mb   *cli.Member
	cfg  Config
	drv  *driver.Driver[ticket.Msg]
	h    *host
	bk   *book
	in   chan clientMsg
	ctl  chan func() // control frames, handled on the daemon goroutine
	fail chan error

	sessions map[*session]bool
	queue    []*session // waiting, oldest first
	holder   *session
	lends    int       // lends since this member took its ticket
	wantedAt time.Time // another member said it waits for a ticket, until then
	joining  time.Time // when the current join started (zero: none)
	wantSent time.Time
	eagerAt  time.Time // join without a client of our own from then on
	wantNext int       // the member asked last for a ticket
	persist  uint64    // the epoch the state file covers
	stopping bool
	ticket   uint32
	n        uint32
	ready    atomic.Bool // found the pool (or founded it)
}

// Serve runs the daemon until a signal (nil) or a failure (69, or 64 for
// a pool of another size).
func Serve(mb *cli.Member, cfg Config) error {
	dyn, ok := mb.Net.(transport.Dynamic)
	if !ok {
		return cli.Exitf(cli.ExitUsage, "ticketd needs the UDP transport")
	}
	joins, err := resolve(cfg.Join)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--join: %v", err)
	}
	if cfg.JoinTimeout <= 0 {
		cfg.JoinTimeout = 10 * time.Second
	}
	d := &daemon{mb: mb, cfg: cfg, in: make(chan clientMsg, 64), ctl: make(chan func(), 256), fail: make(chan error, 1),
		sessions: map[*session]bool{}, persist: cfg.Floor}
	n := uint32(0)
	if len(cfg.Join) == 0 {
		n = uint32(cfg.Tickets)
	}
	d.bk = newBook(mb.ID, dyn, n)
	tcfg := ticket.Config{ID: mb.ID, Rand: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), FaultTolerant: true,
		K: cfg.K, Round: cfg.Round, Margin: cfg.KillGrace + 4*cli.CheckEvery + 50*time.Millisecond, Floor: cfg.Floor}
	if len(cfg.Join) == 0 {
		tcfg.Tickets = cfg.Tickets
	}
	if d.h, err = newHost(tcfg, d.bk.ids); err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	d.drv = driver.New[ticket.Msg](d.h, ticket.Codec{}, mb.Net, driver.Config{Framer: mb.Framer, Log: mb.Log,
		Seen: d.bk.seen, Control: d.control})
	ln, err := cli.ListenControl(Tool, cfg.Socket)
	if err != nil {
		return err
	}
	defer os.Remove(cfg.Socket)
	defer ln.Close()

	// A new member finds the pool before it says it is ready.
	var run *cli.Running
	if len(joins) > 0 {
		if run, err = d.findPool(joins, dyn); err != nil {
			return err
		}
	} else {
		if run, err = mb.Start(d.drv, "tickets", cfg.Tickets, "socket", cfg.Socket); err != nil {
			return err
		}
		d.ready.Store(true)
		d.do(func() { d.h.join(time.Now()) }) // found the pool: own ticket n−1, coordinate all
	}
	defer run.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.accept(ctx, ln)
	tick := time.NewTicker(min(cfg.roundOr()/4, 25*time.Millisecond))
	defer tick.Stop()
	gossip := time.NewTicker(time.Second)
	defer gossip.Stop()
	var stopBy time.Time
	for {
		select {
		case ev := <-run.Events:
			d.event(ev)
		case m := <-d.in:
			d.client(m)
		case fn := <-d.ctl:
			fn()
		case err := <-d.fail:
			return err
		case <-tick.C:
			d.tick()
			if d.stopping && (d.holder == nil || time.Now().After(stopBy)) && d.left() {
				return nil
			}
		case <-gossip.C:
			d.gossip()
		case err := <-run.Done:
			return cli.Failed(err)
		case s := <-run.Signals:
			if d.stopping {
				return nil // a second signal: stop now
			}
			mb.Log.Info("signal: giving the ticket back", "signal", s)
			d.stopping, stopBy = true, time.Now().Add(cfg.KillGrace+time.Second)
			d.lose("the member is stopping")
			for _, s := range d.queue {
				s.cn.Send(Reply{Event: "unavailable", Reason: "the member is stopping"})
			}
			d.queue = nil
		}
	}
}

func (c Config) roundOr() time.Duration {
	if c.Round > 0 {
		return c.Round
	}
	return 100 * time.Millisecond
}

// findPool starts the member and says hello to the --join addresses
// until one answers with its book (and the pool's size); only then is the
// member ready.
func (d *daemon) findPool(joins []netip.AddrPort, dyn transport.Dynamic) (*cli.Running, error) {
	d.mb.DelayReady = true
	run, err := d.mb.Start(d.drv, "join", d.cfg.Join, "socket", d.cfg.Socket)
	if err != nil {
		return nil, err
	}
	hello, _ := json.Marshal(bookMsg{})
	give := time.NewTimer(d.cfg.JoinTimeout)
	defer give.Stop()
	again := time.NewTicker(200 * time.Millisecond)
	defer again.Stop()
	for d.bk.size() == 0 || len(d.bk.ids()) == 0 {
		frame, err := d.mb.Framer.Seal(wire.FamilyControl, ctlHello, wire.Anyone, hello)
		if err != nil {
			run.Stop()
			return nil, err
		}
		for _, a := range joins {
			_ = dyn.SendAddr(a, frame)
		}
		select {
		case <-again.C:
		case err := <-d.fail:
			run.Stop()
			return nil, err
		case err := <-run.Done:
			run.Stop()
			return nil, cli.Failed(err)
		case s := <-run.Signals:
			run.Stop()
			return nil, &cli.ExitError{Code: cli.SignalCode(s)}
		case <-give.C:
			run.Stop()
			return nil, cli.Exitf(cli.ExitUnavailable, "no member of a pool answered at %v within %v", d.cfg.Join, d.cfg.JoinTimeout)
		}
	}
	if n := d.bk.size(); d.cfg.Tickets != 0 && n != uint32(d.cfg.Tickets) {
		run.Stop()
		return nil, cli.Exitf(cli.ExitUsage, "the pool at %v has %d tickets, not %d (--tickets)", d.cfg.Join, n, d.cfg.Tickets)
	}
	d.ready.Store(true)
	if err := d.mb.WriteReady(); err != nil {
		run.Stop()
		return nil, err
	}
	d.mb.Log.Info("found the pool", "tickets", d.bk.size(), "members", len(d.bk.ids()))
	return run, nil
}

// do runs fn on the driver goroutine (where the machine lives).
func (d *daemon) do(fn func()) {
	_ = d.drv.Do(context.Background(), fn)
}

// control handles the members' control frames (driver goroutine: hand
// them to the daemon's).
func (d *daemon) control(from node.ID, typ uint8, body []byte) {
	switch typ {
	case ctlHello, ctlBook:
		var m bookMsg
		if json.Unmarshal(body, &m) != nil {
			return
		}
		if c := d.bk.merge(m); c != 0 {
			if d.ready.Load() {
				d.mb.Log.Warn("a member speaks of a pool of another size", "member", from, "tickets", c)
				return
			}
			select {
			case d.fail <- cli.Exitf(cli.ExitUsage, "member %d has a pool of %d tickets, this one %d: --tickets must agree", from, c, d.bk.size()):
			default:
			}
			return
		}
		if typ == ctlHello {
			_ = d.drv.SendControl(from, ctlBook, encodeBook(d.bk.msg(d.mb.Net.Addr())))
		}
	case ctlWant:
		select {
		case d.ctl <- func() { d.wantedAt = time.Now().Add(d.cfg.roundOr()) }:
		default:
		}
	}
}

// gossip sends this member's book to every member it knows, so that
// members learn each other's addresses without a list given up front.
func (d *daemon) gossip() {
	body := encodeBook(d.bk.msg(d.mb.Net.Addr()))
	for _, id := range d.bk.ids() {
		_ = d.drv.SendControl(id, ctlBook, body)
	}
}

// machine is a snapshot of the machine for the daemon goroutine.
type machine struct {
	state          string
	mayAct, alone  bool
	settled        bool // may give the ticket back without disturbing a repair
	ticket         uint32
	n              uint32
	supportedUntil time.Time
}

func (d *daemon) look() (mc machine) {
	d.do(func() {
		m := d.h.m
		now := time.Now()
		mc = machine{state: m.State(), mayAct: m.MayAct(now), alone: m.Alone(), settled: m.Settled(now), n: m.N(), supportedUntil: m.SupportedUntil()}
		mc.ticket, _, _ = m.Ticket()
	})
	if mc.n != 0 {
		d.bk.setSize(mc.n)
	}
	return mc
}

// until is how long a grant made now is good for.
func (mc machine) until(now time.Time) time.Time {
	if mc.supportedUntil.IsZero() {
		return now.Add(aloneLease)
	}
	if cap := now.Add(aloneLease); cap.Before(mc.supportedUntil) {
		return cap
	}
	return mc.supportedUntil
}

func (d *daemon) event(ev node.Event) {
	d.mb.Out.Event(ev)
	switch e := ev.(type) {
	case ticket.TakenEvent:
		d.joining, d.lends, d.ticket, d.n = time.Time{}, 0, e.Ticket, e.N
		d.serve()
	case ticket.ExcludedEvent:
		d.lose("this member was excluded from the core")
	case ticket.LeftEvent:
		d.lose("the ticket was given back")
	}
}

// lose tells the holder its ticket is gone: its command is stopped.
func (d *daemon) lose(why string) {
	if s := d.holder; s != nil && !s.stopping {
		s.stopping = true
		s.cn.Send(Reply{Event: "lost", Ticket: d.ticket, Epoch: s.epoch, Reason: why})
	}
}

// serve lends the ticket to the oldest waiting client, if it may.
func (d *daemon) serve() {
	if d.holder != nil || len(d.queue) == 0 || d.stopping {
		return
	}
	now := time.Now()
	var epoch uint64
	var ok bool
	var mc machine
	d.do(func() {
		epoch, ok = d.h.m.Lend(now)
		m := d.h.m
		mc = machine{mayAct: ok, alone: m.Alone(), n: m.N(), supportedUntil: m.SupportedUntil()}
		mc.ticket, _, _ = m.Ticket()
	})
	if !ok {
		return
	}
	s := d.queue[0]
	d.queue = d.queue[1:]
	s.wants, s.holds, s.epoch = false, true, epoch
	d.holder = s
	d.lends++
	if epoch > d.persist && d.cfg.StateFile != "" {
		d.persist = epoch + epochReserve
		if err := cli.WriteUint(d.cfg.StateFile, d.persist); err != nil {
			d.mb.Log.Warn("cannot persist the epoch", "err", err)
		}
	}
	s.cn.Send(Reply{Event: "taken", Ticket: mc.ticket, Tickets: mc.n, Epoch: epoch,
		UntilNS: mc.until(now).UnixNano(), KillGraceNS: int64(d.cfg.KillGrace)})
}

// tick renews the holder's lease, answers impatient clients, joins the
// core when a client waits, and gives the ticket back when another member
// waits for one.
func (d *daemon) tick() {
	now := time.Now()
	mc := d.look()
	if s := d.holder; s != nil && !s.stopping {
		if mc.mayAct {
			s.cn.Send(Reply{Event: "valid", UntilNS: mc.until(now).UnixNano()})
		} else {
			d.lose("this member lost its support")
		}
	}
	q := d.queue[:0]
	for _, s := range d.queue {
		if s.nonblock && now.After(s.busyAt) {
			s.wants = false
			s.cn.Send(Reply{Event: "busy"})
			continue
		}
		q = append(q, s)
	}
	d.queue = q
	wanted := now.Before(d.wantedAt)
	switch {
	case d.stopping:
	case d.holder != nil:
	case mc.mayAct && wanted && !mc.alone && mc.settled && (len(d.queue) == 0 || d.lends > 0):
		// Another member waits and no ticket is free: give this one
		// back. A member that has used it gives it back even with
		// clients waiting (they join again), so none starves.
		d.do(func() { d.h.leave(time.Now()) })
		d.eagerAt = now.Add(eagerPause)
	case len(d.queue) == 0 && out(mc.state) && now.After(d.eagerAt) && now.Sub(d.wantedAt) > eagerPause:
		// Idle and out of the core: join anyway. The more members the
		// core has, the more failures it survives (§4: k of 2k+1), and
		// a member in it serves its next client at once. A member that
		// gave its ticket away waits a while first, and nobody joins
		// this way while others say they wait.
		d.do(func() { d.h.join(time.Now()) })
		d.eagerAt = now.Add(eagerPause)
	case len(d.queue) == 0:
	case mc.mayAct:
		d.serve()
	case out(mc.state):
		d.do(func() {
			if !d.h.join(time.Now()) {
				d.mb.Log.Warn("no member known to join through")
			}
		})
		d.joining = now
	case mc.state == "joining" && now.Sub(d.joining) > 2*d.cfg.roundOr() && now.Sub(d.wantSent) > wantEvery*d.cfg.roundOr():
		// One member a round, in turn: each that hears it and is idle
		// gives its ticket back, and one is enough.
		d.wantSent = now
		if ids := d.bk.ids(); len(ids) > 0 {
			d.wantNext++
			_ = d.drv.SendControl(ids[d.wantNext%len(ids)], ctlWant, nil)
		}
	}
}

// out: the machine is in none of the core's states, nor on its way in.
func out(state string) bool { return state == "idle" || state == "left" || state == "excluded" }

// wantEvery: a member that waits for a ticket asks one other member every
// this many rounds: the ticket given back must reach it (CLEAVE, then its
// CJOIN finds the new coordinator) before another is asked for.
const wantEvery = 5

// eagerPause: a member that gave its ticket away, or heard that another
// waits for one, joins without a client of its own only this much later.
const eagerPause = 5 * time.Second

// left reports whether the member is out of the core (or alone in it,
// where giving the ticket back would end the pool), asking to leave if
// not.
func (d *daemon) left() bool {
	mc := d.look()
	switch mc.state {
	case "idle", "left", "excluded", "joining":
		return true
	}
	if mc.state == "coordinator" && !d.joining.IsZero() {
		return false
	}
	d.do(func() { d.h.leave(time.Now()) })
	return false
}

func (d *daemon) client(m clientMsg) {
	s := m.s
	if m.gone {
		delete(d.sessions, s)
		for i, o := range d.queue {
			if o == s {
				d.queue = append(d.queue[:i], d.queue[i+1:]...)
				break
			}
		}
		if d.holder == s {
			d.holder = nil
			d.serve()
		}
		return
	}
	d.sessions[s] = true
	switch m.req.Op {
	case "take":
		switch {
		case d.stopping:
			s.cn.Send(Reply{Event: "unavailable", Reason: "the member is stopping"})
		case s.wants || s.holds:
			s.cn.Send(Reply{Event: "error", Error: "this connection already holds or waits for a ticket"})
		default:
			s.wants, s.nonblock = true, m.req.NonBlock
			s.busyAt = time.Now().Add(4 * d.cfg.roundOr())
			d.queue = append(d.queue, s)
			d.serve()
		}
	case "release":
		if d.holder == s {
			d.holder, s.holds = nil, false
			d.serve()
		}
	case "status":
		s.cn.Send(Reply{Event: "status", Status: d.status()})
	default:
		s.cn.Send(Reply{Event: "error", Error: fmt.Sprintf("unknown op %q", m.req.Op)})
	}
}

// status is the member's view: the machine's state, the book and the
// local clients.
func (d *daemon) status() json.RawMessage {
	var st any
	d.do(func() { st = d.h.Status() })
	out := map[string]any{"member": d.mb.ID, "addr": d.mb.Net.Addr(), "machine": st, "members": d.bk.ids(),
		"waiting": len(d.queue), "lent": d.holder != nil, "lends": d.lends}
	b, _ := json.Marshal(out)
	return b
}

func (d *daemon) accept(ctx context.Context, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		cn := cli.NewConn(c)
		// A client that stops reading is cut off once 256 lines wait for
		// it (what it holds is then released: its command is stopped by
		// its own lease).
		cn.NonBlocking(256, 10*time.Second)
		go d.read(ctx, cn)
	}
}

func (d *daemon) read(ctx context.Context, cn *cli.Conn) {
	s := &session{cn: cn}
	defer func() {
		cn.Close()
		select {
		case d.in <- clientMsg{s: s, gone: true}:
		case <-ctx.Done():
		}
	}()
	for {
		var req Request
		if err := cn.Next(&req); err != nil {
			return
		}
		select {
		case d.in <- clientMsg{s: s, req: req}:
		case <-ctx.Done():
			return
		}
	}
}
