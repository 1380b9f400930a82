package ticketd

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/ticket"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// LogExclusionAgreed is the log message of a reclaim's agreed exclusion
// (a TemporaryEvent), and LogKeyTickets its attribute giving the tickets
// excluded: named here for the tests that read members' logs.
const (
	LogExclusionAgreed = "exclusion agreed: temporary coordinator"
	LogKeyTickets      = "tickets"
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
	since    time.Time // waiting since
	busyAt   time.Time // nonblock: answer busy then
	holds    *slot     // the slot whose ticket it holds
	epoch    uint64
	stopping bool      // told its ticket is lost; its command is being stopped
	sent     time.Time // the lease's end as last sent to it (taken, valid)
}

type clientMsg struct {
	s    *session
	req  Request
	gone bool
}

// slot is one process of the paper's core that this member runs: its own
// ID (the member's, then the member's with the slot number in the top
// byte), socket, driver and machine. A member has as many slots as it has
// clients holding tickets at once, up to n; slot 0 is the member's own,
// on --bind.
type slot struct {
	idx       int
	id        node.ID
	drv       *driver.Driver[ticket.Msg]
	h         *ticket.Member
	net       transport.Transport
	holder    *session
	lends     int       // lends since this slot took its ticket
	idleSince time.Time // when its last holder went
	lending   bool      // asked its Member to lend its ticket, no answer yet
	refused   string    // why its Member last refused to lend (ticket.LendRefusedEvent); "" since a lend
	refusedAt time.Time // since when it refuses for that reason
	refusedTo time.Time // when it last refused
	refusedIn string    // the slot's state (as last looked at) when it last refused
	told      bool      // the refusal was logged above debug level
	yield     bool      // give the ticket back (CLEAVE) when the current use ends
	takenAt   time.Time // when it took its ticket
	joining   time.Time // when the current join started (zero: none)
	ticket    uint32
	n         uint32
	mc        machine // as last looked at
}

type slotEvent struct {
	s  *slot
	ev node.Event
}

// maxSlots bounds one member's slots (the slot number is the top byte of
// the ID, below wire.ClientIDBase's).
const maxSlots = 0xF0

// MaxMemberID is the largest --id: the top byte numbers the slots.
const MaxMemberID = 1<<24 - 1

// Stretch is every member's ticket.Config.Stretch: a member whose own
// rounds run late (a busy host) counts its ALIVEs for up to this many
// support windows and gives its successor as many times the suspicion
// time; every exclusion waits out the full stretch (docs/ticketd.md,
// "Busy hosts"). The same on every member, as the round is. No
// ticket.Config.Grant beyond it: with real processes a granted stretch of
// 8 made reclaims slower at load and kept no more pools (docs/ticketd.md,
// "Busy hosts").
const Stretch = 3

type daemon struct {
	mb     *cli.Member
	cfg    Config
	bk     *book
	slots  []*slot
	in     chan clientMsg
	ctl    chan func() // control frames, handled on the daemon goroutine
	fail   chan error
	events chan slotEvent
	ctx    context.Context
	tcfg   ticket.Config

	sessions map[*session]bool
	queue    []*session // waiting, oldest first
	wantedAt time.Time  // another member said it waits for a ticket, until then
	wantSent time.Time
	eagerAt  time.Time // slot 0 joins without a client of our own from then on
	wantNext int       // the member asked last for a ticket
	othersAt time.Time // another member last said it waits for a ticket
	persist  uint64    // the epoch the state file covers
	stopping bool
	ready    atomic.Bool // found the pool (or founded it)
	pc       *prcast
	// For --metrics, as the last tick saw them: tickets this member's
	// clients hold, tickets its slots own with no client, refounds.
	held, free, refounds atomic.Int64
}

// Serve runs the daemon until a signal (nil) or a failure (69, or 64 for
// a pool of another size).
func Serve(mb *cli.Member, cfg Config) error {
	dyn, ok := mb.Net.(transport.Dynamic)
	if !ok {
		return cli.Exitf(cli.ExitUsage, "ticketd needs the UDP transport")
	}
	if mb.ID > MaxMemberID {
		return cli.Exitf(cli.ExitUsage, "--id must be 1 to %d for ticketd (the top byte numbers a member's slots)", MaxMemberID)
	}
	joins, err := resolve(cfg.Join)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--join: %v", err)
	}
	if cfg.JoinTimeout <= 0 {
		cfg.JoinTimeout = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &daemon{mb: mb, cfg: cfg, in: make(chan clientMsg, 64), ctl: make(chan func(), 256), fail: make(chan error, 1),
		events: make(chan slotEvent, 4096), ctx: ctx, sessions: map[*session]bool{}, persist: cfg.Floor}
	n := uint32(0)
	if len(cfg.Join) == 0 {
		n = uint32(cfg.Tickets)
	}
	// The address book tells this member's starts apart by the Framer's
	// incarnation (its start time).
	d.bk = newBook(mb.ID, mb.Incarnation, dyn, n)
	d.tcfg = cfg.machineConfig()
	first := d.tcfg
	if len(cfg.Join) == 0 {
		first.Tickets = cfg.Tickets
	}
	s0 := &slot{id: mb.ID, net: mb.Net}
	if err := d.initSlot(s0, first, mb.Framer); err != nil {
		return err
	}
	d.slots = []*slot{s0}
	mb.Metrics.Gauge("roundtable_ticketd_tickets", func() float64 { return float64(d.bk.size()) })
	mb.Metrics.Gauge("roundtable_ticketd_tickets_held", func() float64 { return float64(d.held.Load()) })
	mb.Metrics.Gauge("roundtable_ticketd_tickets_free", func() float64 { return float64(d.free.Load()) })
	mb.Metrics.CounterFunc("roundtable_ticketd_refounds_total", func() uint64 { return uint64(d.refounds.Load()) })
	mb.Metrics.Require(func() error {
		if !d.ready.Load() {
			return fmt.Errorf("has not found the ticket pool")
		}
		return nil
	})
	d.bk.addSlot(s0.id, mb.Net.Addr(), nil)
	d.pc = &prcast{watchers: map[*session]bool{}}
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
		if run, err = mb.Start(s0.drv, "tickets", cfg.Tickets, "socket", cfg.Socket); err != nil {
			return err
		}
		d.ready.Store(true)
		d.tell(s0, ticket.Msg{Type: ticket.MsgJoin}) // found the pool: own ticket n−1, coordinate all
	}
	defer run.Stop()
	defer d.closeSlots()
	defer d.farewell()
	d.gossip() // the others learn of this member now, not a second later
	go func() {
		for ev := range run.Events {
			d.events <- slotEvent{s0, ev}
		}
	}()
	// A client that stops reading is cut off once 256 lines wait for it
	// (what it holds is then released: its command is stopped by its own
	// lease).
	go cli.Accept(ln, 256, func(cn *cli.Conn) { d.read(ctx, cn) })
	tick := time.NewTicker(min(cfg.roundOr()/4, 25*time.Millisecond))
	defer tick.Stop()
	gossip := time.NewTicker(time.Second)
	defer gossip.Stop()
	var stopBy time.Time
	for {
		select {
		case se := <-d.events:
			d.event(se.s, se.ev)
		case m := <-d.in:
			d.client(m)
		case fn := <-d.ctl:
			fn()
		case err := <-d.fail:
			return err
		case <-tick.C:
			d.tick()
			d.prcastGroup()
			if d.stopping && (d.holding() == 0 || time.Now().After(stopBy)) && d.left() {
				return nil
			}
		case <-gossip.C:
			d.gossip()
		case err := <-run.Done:
			return cli.Failed(err)
		case sig := <-run.Signals:
			if d.stopping {
				return nil // a second signal: stop now
			}
			mb.Log.Info("signal: giving the tickets back", "signal", sig)
			d.stopping, stopBy = true, time.Now().Add(cfg.KillGrace+time.Second)
			for _, s := range d.slots {
				d.lose(s, "the member is stopping")
			}
			for _, s := range d.queue {
				s.cn.Send(Reply{Event: "unavailable", Reason: "the member is stopping"})
			}
			d.queue = nil
		}
	}
}

// initSlot makes a slot's machine and driver.
func (d *daemon) initSlot(s *slot, cfg ticket.Config, f *wire.Framer) error {
	cfg.ID = s.id
	cfg.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	self := s.id
	h, err := cli.Build(ticket.NewMember(cfg, func() []node.ID {
		var out []node.ID
		for _, id := range d.bk.ids() {
			if id != self {
				out = append(out, id)
			}
		}
		return out
	}, s.idx == 0)) // the member's first process runs its PrCast
	if err != nil {
		return err
	}
	s.h = h
	s.drv = driver.New[ticket.Msg](traceMember(h, d.mb.Log, s.idx), ticket.Codec{}, s.net, driver.Config{Framer: f, Log: d.mb.Log, Seen: d.bk.seen, Control: d.control})
	return nil
}

// newSlot opens another slot: a socket on --bind's host, a Framer under
// the slot's ID, a driver running.
func (d *daemon) newSlot() (*slot, error) {
	idx := len(d.slots)
	id := node.ID(idx)<<24 | d.mb.ID
	host, _, err := net.SplitHostPort(d.mb.Net.Addr())
	if err != nil {
		return nil, err
	}
	tr, err := transport.ListenUDP(net.JoinHostPort(host, "0"), nil)
	if err != nil {
		return nil, err
	}
	f := wire.NewFramerRing(cli.ClusterKey(d.mb.Cluster, nil), id, uint64(time.Now().UnixNano()), d.mb.Key)
	s := &slot{idx: idx, id: id, net: tr}
	if err := d.initSlot(s, d.tcfg, f); err != nil {
		tr.Close()
		return nil, err
	}
	d.bk.addSlot(id, tr.Addr(), tr)
	go func() {
		if err := s.drv.Run(d.ctx, func(ev node.Event) { d.events <- slotEvent{s, ev} }); err != nil {
			d.mb.Log.Warn("a slot's transport failed", "slot", idx, "err", err)
		}
	}()
	d.slots = append(d.slots, s)
	return s, nil
}

func (d *daemon) closeSlots() {
	for _, s := range d.slots[1:] {
		s.net.Close()
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
	run, err := d.mb.Start(d.slots[0].drv, "join", d.cfg.Join, "socket", d.cfg.Socket)
	if err != nil {
		return nil, err
	}
	hello := encodeBook(bookMsg{BookView: ticket.BookView{Inc: d.bk.inc()}})
	give := time.NewTimer(d.cfg.JoinTimeout)
	defer give.Stop()
	again := time.NewTicker(200 * time.Millisecond)
	defer again.Stop()
	for d.bk.size() == 0 || len(d.bk.others()) == 0 {
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
	d.mb.Log.Info("found the pool", "tickets", d.bk.size(), "members", len(d.bk.others()))
	return run, nil
}

// leased hands another slot the lease slot 0 holds, as slot 0's last
// look saw it (ticket.MsgLeased): the slot's Member lends, serves joins
// and stays in the core under it.
func (d *daemon) leased(s *slot) {
	if u := d.slots[0].mc.leaseUntil; !u.IsZero() {
		d.tell(s, ticket.Msg{Type: ticket.MsgLeased, Attempt: uint64(u.UnixNano())})
	}
}

// tell hands a slot's machine a local request (a machine input: the
// Member decides what it does).
func (d *daemon) tell(s *slot, msg ticket.Msg) {
	_ = s.drv.Request(context.Background(), msg)
}

// do runs fn on a slot's driver goroutine (where its machine lives).
func (d *daemon) do(s *slot, fn func()) {
	_ = s.drv.Do(context.Background(), fn)
}

// control handles the members' control frames (driver goroutines: hand
// what touches the daemon's state to its goroutine).
func (d *daemon) control(from node.ID, typ uint8, body []byte) {
	switch typ {
	case ctlHello:
		d.hello(from, body)
	case ctlLeave:
		var m bookMsg
		if json.Unmarshal(body, &m) != nil || m.Inc == 0 {
			return
		}
		if addr, ok := d.bk.remove(from, ticket.GoneLeft, m.Inc); ok {
			d.mb.Log.Info("a member left the pool", "member", from, "addr", addr)
		}
	case ctlBook:
		var m bookMsg
		if json.Unmarshal(body, &m) != nil {
			return
		}
		if m.Held != "" && !d.ready.Load() {
			select {
			case d.fail <- cli.Exitf(cli.ExitUsage, "--id %d is already in the pool: the member at %s holds it", d.mb.ID, m.Held):
			default:
			}
			return
		}
		c, forgotten, tell := d.bk.merge(from, m)
		if tell.IsValid() {
			d.sendBook(from, tell)
		}
		if forgotten {
			select {
			case d.fail <- cli.Exitf(cli.ExitLost, "member %d says this member was forgotten (ticketd forget): start it again with --join", from):
			default:
			}
			return
		}
		if c != 0 {
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
	case ctlWant:
		select {
		case d.ctl <- func() { d.othersAt = time.Now(); d.wantedAt = d.othersAt.Add(d.cfg.roundOr()) }:
		default:
		}
	}
}

// hello answers a joiner with this member's book, where its hello came
// from. The joiner is not in the book until it speaks for itself with
// its own book, having accepted the pool: a joiner that is refused (its
// --tickets, or an ID another member holds) is never in anybody's book.
func (d *daemon) hello(from node.ID, body []byte) {
	var m bookMsg
	if json.Unmarshal(body, &m) != nil {
		return
	}
	src, holder, taken := d.bk.hello(from, m.Inc)
	if !src.IsValid() {
		return
	}
	ans := d.bk.msg()
	if taken {
		ans.Held = holder
		d.mb.Log.Warn("refused a joiner: its --id is taken", "id", from, "addr", src, "holder", holder)
	}
	frame, err := d.mb.Framer.Seal(wire.FamilyControl, ctlBook, from, encodeBook(ans))
	if err != nil {
		return
	}
	if dyn, ok := d.mb.Net.(transport.Dynamic); ok {
		_ = dyn.SendAddr(src, frame)
	}
}

// gossip sends this member's book to every other member's first slot, so
// that members learn each other's addresses without a list given up front.
func (d *daemon) gossip() {
	body := encodeBook(d.bk.msg())
	for _, id := range d.bk.others() {
		if id <= MaxMemberID {
			_ = d.slots[0].drv.SendControl(id, ctlBook, body)
		}
	}
}

// farewell tells every other member that this one leaves the book (a
// member that misses it hears of it in the others' books).
func (d *daemon) farewell() {
	body := encodeBook(bookMsg{BookView: ticket.BookView{Inc: d.bk.inc()}})
	for _, id := range d.bk.others() {
		if id <= MaxMemberID {
			_ = d.slots[0].drv.SendControl(id, ctlLeave, body)
		}
	}
}

// forget strikes a member off the book for good, pool-wide: the other
// members learn it from this member's book, the forgotten one too (if it
// is still running, it stops).
func (d *daemon) forget(s *session, id node.ID) {
	switch {
	case id == node.None || id > MaxMemberID:
		s.cn.Send(Reply{Event: "error", Error: fmt.Sprintf("a member ID is 1 to %d", MaxMemberID)})
		return
	case id == d.mb.ID:
		s.cn.Send(Reply{Event: "error", Error: fmt.Sprintf("member %d is this member: stop it instead", id)})
		return
	}
	a, _ := d.bk.addr(id)
	addr, ok := d.bk.remove(id, ticket.GoneForgotten, 0)
	if !ok {
		s.cn.Send(Reply{Event: "error", Error: fmt.Sprintf("member %d is not in this member's book", id)})
		return
	}
	d.mb.Log.Warn("forgot a member: it must join again to come back", "member", id, "addr", addr)
	d.gossip()
	d.sendBook(id, a)
	s.cn.Send(Reply{Event: "forgotten", Member: uint32(id), Addr: addr})
}

// sendBook sends this member's book to member id at a, which is no longer
// on it: it hears of its tomb that way.
func (d *daemon) sendBook(id node.ID, a netip.AddrPort) {
	if !a.IsValid() {
		return
	}
	if frame, err := d.mb.Framer.Seal(wire.FamilyControl, ctlBook, id, encodeBook(d.bk.msg())); err == nil {
		if dyn, ok := d.mb.Net.(transport.Dynamic); ok {
			_ = dyn.SendAddr(a, frame)
		}
	}
}

// machine is a snapshot of a slot's machine for the daemon goroutine.
type machine struct {
	state          string
	mayAct, alone  bool
	settled        bool // may give the ticket back without disturbing a repair
	ticket         uint32
	n              uint32
	supportedUntil time.Time
	leased         bool      // the member holds a lease from a majority (slot 0's, as told to the others)
	leaseUntil     time.Time // when it ends
	mark           uint64    // the highest epoch the slot's machines issued or heard of
	// Slot 0's refounding: no joins meanwhile, probes sent, pools founded.
	frozen           bool
	probes, refounds int
	admitFrom        time.Time // slot 0 founded the pool: other members' processes come in from then (ticket.MsgAdmit)
}

func (d *daemon) look(s *slot) machine {
	var mc machine
	d.do(s, func() {
		m := s.h.Machine()
		now := time.Now()
		mc = machine{state: m.State(), mayAct: m.MayAct(now), alone: m.Alone(), settled: m.Settled(now), n: m.N(), supportedUntil: m.SupportedUntil(),
			leased: s.h.Leased(now), leaseUntil: s.h.LeaseUntil()}
		mc.ticket, _, _ = m.Ticket()
		mc.mark = s.h.Mark()
		mc.frozen = s.h.Frozen(now)
		mc.probes, mc.refounds = s.h.RefoundStats()
		mc.admitFrom = s.h.AdmitFrom()
	})
	if mc.n != 0 {
		d.bk.setSize(mc.n)
	}
	s.mc = mc
	return mc
}

// until is how long a grant made now is good for: while the process is
// supported and the member holds its lease, a second at most.
func (mc machine) until(now time.Time) time.Time {
	u := now.Add(aloneLease)
	if !mc.supportedUntil.IsZero() && mc.supportedUntil.Before(u) {
		u = mc.supportedUntil
	}
	if !mc.leaseUntil.IsZero() && mc.leaseUntil.Before(u) {
		u = mc.leaseUntil
	}
	return u
}

func (d *daemon) event(s *slot, ev node.Event) {
	if e, ok := ev.(ticket.NoticeEvent); ok {
		d.notice(e) // for watchers, not stdout
		return
	}
	if s == d.slots[0] && d.refoundEvent(ev) {
		return
	}
	switch e := ev.(type) { // lends: between the Member and the daemon
	case ticket.LentEvent:
		d.lent(s, e)
		return
	case ticket.LendRefusedEvent:
		s.lending = false
		d.refusedLend(s, e.Why, time.Now())
		return
	case ticket.ReturnedEvent:
		return
	case ticket.LeaveHeldEvent:
		// Not given back: a neighbour did not answer within a round (a
		// hand-back now could cost a live process its support), or a
		// client took the ticket meanwhile. Asked for again, it goes
		// once they answer.
		d.mb.Log.Info("ticket kept, not given back", "slot", s.idx, "ticket", e.Ticket, "silent", e.Silent)
		return
	case ticket.NoContactEvent:
		d.mb.Log.Warn("no member known to join through", "slot", s.idx)
		return
	case ticket.ExcludingEvent:
		// A reclaim's phases, for the log (stdout keeps what holders and
		// scripts act on: "excluded" once the tickets are back).
		d.mb.Log.Info("successor silent: asking for its exclusion", "slot", s.idx, "ticket", e.From, "candidate", e.To)
		return
	case ticket.TemporaryEvent:
		// Tickets over 1: a free ticket lay in the range of the process
		// excluded, and through it a process nobody knows may have
		// joined, so the wait counts a longer chain
		// (ticket.DetectionBoundFor).
		d.mb.Log.Info(LogExclusionAgreed, "slot", s.idx, "ticket", e.From, "candidate", e.To,
			LogKeyTickets, e.Tickets, "chain", e.Chain, "wait", e.Wait.Round(time.Millisecond))
		return
	}
	if s != d.slots[0] {
		d.mb.Metrics.Event(ev) // slot 0's are counted as its driver emits them
	}
	d.mb.Out.Event(ev)
	switch e := ev.(type) {
	case ticket.TakenEvent:
		s.joining, s.lends, s.ticket, s.n, s.idleSince, s.takenAt, s.yield = time.Time{}, 0, e.Ticket, e.N, time.Now(), time.Now(), false
		d.serve()
	case ticket.ExcludedEvent:
		d.mb.Log.Warn("a process of this member lost its support and left the core (excluded)", "slot", s.idx, "ticket", e.Ticket, "epoch", e.Epoch, "why", e.Why)
		d.lose(s, "this member was excluded from the core")
	case ticket.LeaseLostEvent:
		d.mb.Log.Warn("this member lost its lease from a majority of the members", "slot", s.idx, "why", e.Why)
		d.lose(s, "this member lost its lease from a majority of the members")
	case ticket.LeftEvent:
		d.lose(s, "the ticket was given back")
	case ticket.ReclaimedEvent:
		d.announce(Notice{Event: "excluded", Ticket: e.From, Through: e.To})
		// The core excluded these processes: their members leave the book,
		// so that a refound does not wait for them (a live one comes back
		// as a newer incarnation once it hears of it).
		if struck := d.bk.exclude(e.Excluded); len(struck) > 0 {
			d.mb.Log.Info("struck excluded members off the book", "members", struck)
			d.gossip()
		}
	}
}

// lose tells a slot's holder its ticket is gone: its command is stopped.
func (d *daemon) lose(s *slot, why string) {
	if c := s.holder; c != nil && !c.stopping {
		c.stopping = true
		d.mb.Log.Warn("a client's ticket was taken back: its command is stopped", "ticket", s.ticket, "epoch", c.epoch, "why", why)
		c.cn.Send(Reply{Event: "lost", Ticket: s.ticket, Epoch: c.epoch, Reason: why})
		d.announce(Notice{Event: "lost", Ticket: s.ticket, Epoch: c.epoch})
	}
}

// released announces the end of a use (a lost one was announced as lost).
func (d *daemon) released(sl *slot, s *session) {
	if !s.stopping {
		d.announce(Notice{Event: "released", Ticket: sl.ticket, Epoch: s.epoch})
	}
}

func (d *daemon) holding() int {
	n := 0
	for _, s := range d.slots {
		if s.holder != nil {
			n++
		}
	}
	return n
}

// serve asks free slots to lend their tickets, as many as clients wait
// (ticket.MsgLend: each slot's Member decides, and answers with a
// LentEvent or a LendRefusedEvent; lent hands the ticket over).
func (d *daemon) serve() {
	want := len(d.queue)
	for _, s := range d.slots {
		if s.lending {
			want--
		}
	}
	// Slots that owned their ticket at the last look are asked first: a
	// slot out of the core refuses, and asked first it would take the turn
	// of one that owns a ticket, tick after tick.
	for _, owns := range []bool{true, false} {
		for _, s := range d.slots {
			if want <= 0 || d.stopping {
				return
			}
			if (s.mc.state == "coordinator") == owns && s.holder == nil && !s.lending && !s.yield {
				s.lending = true
				want--
				_ = s.drv.Request(context.Background(), ticket.Msg{Type: ticket.MsgLend})
			}
		}
	}
}

// lent hands a lent ticket to the oldest waiting client, or gives it
// back at once if nobody waits any more.
func (d *daemon) lent(s *slot, e ticket.LentEvent) {
	s.lending, s.refused, s.told = false, "", false
	if len(d.queue) == 0 || d.stopping || s.holder != nil {
		d.giveBack(s)
		return
	}
	now := time.Now()
	c := d.queue[0]
	d.queue = d.queue[1:]
	c.wants, c.holds, c.epoch = false, s, e.Epoch
	s.holder = c
	s.lends++
	if e.Epoch > d.persist && d.cfg.StateFile != "" {
		d.persist = e.Epoch + epochReserve
		if err := cli.WriteUint(d.cfg.StateFile, d.persist); err != nil {
			d.mb.Log.Warn("cannot persist the epoch", "err", err)
		}
	}
	c.sent = machine{supportedUntil: e.Until}.until(now)
	c.cn.Send(Reply{Event: "taken", Ticket: e.Ticket, Tickets: e.N, Epoch: e.Epoch,
		UntilNS: c.sent.UnixNano(), KillGraceNS: int64(d.cfg.KillGrace)})
	d.announce(Notice{Event: "taken", Ticket: e.Ticket, Epoch: e.Epoch})
}

// renew reports whether a holder whose lease ends at sent is told of the
// new end u: when u is later by at least a quarter of what is left of it
// (and a quarter round). The lease moves one ALIVE at a time (a round) or
// with the clock when alone; telling every tick (a quarter round) woke the
// client and its watchdog four times per move, on a host short of CPU.
// The client's lease is never shorter than three quarters of what it could
// be, less a quarter round.
func renew(sent, u, now time.Time, round time.Duration) bool {
	return u.Sub(sent) >= max(round/4, u.Sub(now)/4)
}

// refusedLend notes why slot s's Member refused to lend (asked again
// each tick while clients wait): logged at debug level when the reason
// changes, and for the clients' wait report (status).
func (d *daemon) refusedLend(s *slot, why string, now time.Time) {
	// The same reason with other figures (grants, how long a promise
	// lasts) is the same refusal going on.
	if key, _, _ := strings.Cut(why, " ("); s.refused == "" || !strings.HasPrefix(s.refused, key) {
		s.refusedAt, s.told = now, false
		d.mb.Log.Debug("lend refused", "slot", s.idx, "state", s.mc.state, "why", why)
	}
	s.refused, s.refusedTo, s.refusedIn = why, now, s.mc.state
}

// refusing is why slot s does not lend its ticket now ("" when it was
// not asked lately, or lent, or its state changed since): the Member
// refuses each tick while a client waits, so an older refusal is stale.
func (s *slot) refusing(now time.Time) string {
	if s.refused == "" || now.Sub(s.refusedTo) > time.Second || s.refusedIn != s.mc.state {
		return ""
	}
	return s.refused
}

// tellRefusals logs, once per reason, why a slot that owns its ticket
// does not lend it while a client has waited a second for one (a
// refusal that has lasted a second too: one a tick before a lend is not
// worth a warning).
func (d *daemon) tellRefusals(now time.Time) {
	if len(d.queue) == 0 || now.Sub(d.queue[0].since) < time.Second {
		return
	}
	for _, s := range d.slots {
		if why := s.refusing(now); why != "" && !s.told && !out(s.mc.state) && s.mc.state != "joining" && now.Sub(s.refusedAt) >= time.Second {
			s.told = true
			d.mb.Log.Warn("a client waits and this member does not lend its ticket: "+why, "slot", s.idx, "ticket", s.mc.ticket,
				"state", s.mc.state, "since", now.Sub(s.refusedAt).Round(time.Millisecond), "waited", now.Sub(d.queue[0].since).Round(time.Millisecond))
		}
	}
}

// giveBack tells slot s's Member that the use of its ticket is over
// (ticket.MsgReturn).
func (d *daemon) giveBack(s *slot) {
	_ = s.drv.Request(context.Background(), ticket.Msg{Type: ticket.MsgReturn})
}

// tick renews the holders' leases, answers impatient clients, brings
// slots into the core while clients wait, and gives a ticket back when
// another member waits for one.
func (d *daemon) tick() {
	now := time.Now()
	free := 0
	for i, s := range d.slots {
		if i > 0 {
			d.leased(s)
			d.admit(s)
		}
		mc := d.look(s)
		if s.holder == nil && mc.state == "coordinator" { // owns its ticket (ticket.Machine.Ticket)
			free++
		}
		d.keep(mc.mark) // the mark the ring carried here survives a restart
		if c := s.holder; c != nil && !c.stopping {
			switch {
			case !mc.mayAct:
				d.lose(s, "this member lost its support")
			case !mc.leased:
				d.lose(s, "this member lost its lease from a majority of the members")
			default:
				if u := mc.until(now); renew(c.sent, u, now, d.cfg.roundOr()) {
					c.sent = u
					c.cn.Send(Reply{Event: "valid", UntilNS: u.UnixNano()})
				}
			}
		}
	}
	d.free.Store(int64(free))
	d.held.Store(int64(d.holding()))
	d.refounds.Store(int64(d.slots[0].mc.refounds))
	q := d.queue[:0]
	for _, c := range d.queue {
		if c.nonblock && now.After(c.busyAt) {
			c.wants = false
			c.cn.Send(Reply{Event: "busy"})
			continue
		}
		q = append(q, c)
	}
	d.queue = q
	if d.stopping {
		return
	}
	d.serve()
	d.tellRefusals(now)
	d.tellLocal(now)
	if d.frozen() {
		return // a refound is being decided: no joins, nor tickets given back, meanwhile
	}
	// Another member waits and no ticket is free: give one back, from an
	// idle slot. A slot that has been used gives its ticket back even with
	// clients waiting here (they take another), so no member starves.
	inCore := 0
	for _, s := range d.slots {
		if st := s.mc.state; st == "coordinator" || st == "linking" {
			inCore++
		}
	}
	if now.Before(d.wantedAt) {
		for _, s := range d.slots {
			if mc := s.mc; s.holder == nil && !s.lending && mc.mayAct && !mc.alone && mc.settled && (len(d.queue) == 0 || s.lends > 0) {
				d.tell(s, ticket.Msg{Type: ticket.MsgLeave})
				d.wantedAt = time.Time{}
				d.eagerAt = now.Add(eagerPause)
				break
			}
		}
	}
	// Still wanted, and every ticket here is in use: the one lent longest
	// is given back when its current use ends (yieldNow), so that a
	// member busy with clients of its own cannot starve another. A member
	// with one ticket gives it up only after holding it for holdSlice,
	// so that tickets do not move at every ask while members have one
	// each; one holding more gives one up at once.
	if now.Before(d.wantedAt) {
		var pick *slot
		for _, s := range d.slots {
			if mc := s.mc; s.holder != nil && !s.yield && s.lends > 0 && mc.mayAct && !mc.alone &&
				(inCore > 1 || now.Sub(s.takenAt) > holdSlice) && (pick == nil || s.takenAt.Before(pick.takenAt)) {
				pick = s
			}
		}
		if pick != nil {
			pick.yield = true
			d.wantedAt = time.Time{}
		}
	}
	// A slot beyond the member's own that has been idle a while gives its
	// ticket back, so that tickets do not pile up on the host that was
	// busiest, and other members' own slots can be in the core again (a
	// core spread over more hosts survives more).
	if len(d.queue) == 0 {
		for _, s := range d.slots[1:] {
			if mc := s.mc; s.holder == nil && !s.lending && mc.mayAct && !mc.alone && mc.settled && now.Sub(s.idleSince) > idleSlot {
				d.tell(s, ticket.Msg{Type: ticket.MsgLeave})
				break
			}
		}
	}
	// Clients wait: bring as many slots into the core as they need.
	coming := 0
	for _, s := range d.slots {
		if st := s.mc.state; st == "joining" || st == "linking" {
			coming++
		}
	}
	// While other members say they wait, a member that has a ticket
	// brings no more slots in (nor keeps them trying): a ticket given
	// back is for the member that asked for it.
	if inCore > 0 && now.Sub(d.othersAt) < eagerPause {
		for _, s := range d.slots {
			if s.mc.state == "joining" {
				d.tell(s, ticket.Msg{Type: ticket.MsgReset})
				s.mc.state, s.joining = "idle", time.Time{}
			}
		}
		coming = len(d.queue) // none to bring
	}
	for need := len(d.queue) - coming; need > 0; need-- {
		s := d.outSlot()
		if s == nil {
			break
		}
		d.tell(s, ticket.Msg{Type: ticket.MsgJoin})
		s.joining, s.mc.state = now, "joining"
	}
	// Idle and out of the core: the member's own slot joins anyway. The
	// more members the core has, the more failures it survives (§4: k of
	// 2k+1), and a member in it serves its next client at once. A member
	// that gave a ticket away waits a while first, and nobody joins this
	// way while others say they wait.
	if s0 := d.slots[0]; len(d.queue) == 0 && out(s0.mc.state) && now.After(d.eagerAt) && now.Sub(d.wantedAt) > eagerPause {
		d.tell(s0, ticket.Msg{Type: ticket.MsgJoin})
		d.eagerAt = now.Add(eagerPause)
	}
	// Still waiting after two rounds of joining: ask one other member a
	// round, in turn, to give a ticket back.
	if len(d.queue) > 0 && now.Sub(d.wantSent) > wantEvery*d.cfg.roundOr() {
		for _, s := range d.slots {
			if s.mc.state == "joining" && now.Sub(s.joining) > 2*d.cfg.roundOr() {
				d.wantSent = now
				if ids := d.bk.others(); len(ids) > 0 {
					d.wantNext++
					_ = d.slots[0].drv.SendControl(ids[d.wantNext%len(ids)], ctlWant, nil)
				}
				break
			}
		}
	}
}

// outSlot is a slot out of the core to bring in: an existing one, or a
// new one while the member has fewer slots than the pool has tickets.
func (d *daemon) outSlot() *slot {
	for _, s := range d.slots {
		if out(s.mc.state) {
			return s
		}
	}
	if n := int(d.bk.size()); len(d.slots) >= min(n, maxSlots) {
		return nil
	}
	s, err := d.newSlot()
	if err != nil {
		d.mb.Log.Warn("cannot open another slot", "err", err)
		return nil
	}
	d.leased(s)
	d.admit(s)
	d.look(s)
	return s
}

// out: the machine is in none of the core's states, nor on its way in.
func out(state string) bool { return state == "idle" || state == "left" || state == "excluded" }

// holdSlice: a member with one ticket and clients of its own gives it to
// a member that asks for one only once it has held it this long (at most a
// fifth of a client's default wait).
const holdSlice = 2 * time.Second

// yieldNow gives slot s's ticket back (CLEAVE) at the end of a use, if it
// was asked to (tick) and may leave without disturbing a repair.
func (d *daemon) yieldNow(s *slot) {
	if !s.yield {
		return
	}
	s.yield = false
	if mc := s.mc; mc.mayAct && !mc.alone && mc.settled && !d.frozen() {
		d.tell(s, ticket.Msg{Type: ticket.MsgLeave})
		d.eagerAt = time.Now().Add(eagerPause)
	}
}

// wantEvery: a member that waits for a ticket asks one other member every
// this many rounds: the ticket given back must reach it (CLEAVE, then its
// CJOIN finds the new coordinator) before another is asked for.
const wantEvery = 5

// eagerPause: a member that gave its ticket away, or heard that another
// waits for one, joins without a client of its own only this much later.
const eagerPause = 5 * time.Second

// idleSlot: a slot other than the member's own gives its ticket back
// after this long without a holder.
const idleSlot = 2 * time.Second

// left reports whether every slot is out of the core (or alone in it,
// where giving the ticket back would end the pool), asking those in it to
// leave.
func (d *daemon) left() bool {
	done := true
	for _, s := range d.slots {
		mc := d.look(s)
		switch mc.state {
		case "idle", "left", "excluded", "joining":
			continue
		}
		done = false
		if mc.state == "coordinator" {
			d.tell(s, ticket.Msg{Type: ticket.MsgLeave})
		}
	}
	return done
}

func (d *daemon) client(m clientMsg) {
	s := m.s
	if m.gone {
		delete(d.sessions, s)
		delete(d.pc.watchers, s)
		for i, o := range d.queue {
			if o == s {
				d.queue = append(d.queue[:i], d.queue[i+1:]...)
				break
			}
		}
		if sl := s.holds; sl != nil && sl.holder == s {
			sl.holder, sl.idleSince = nil, time.Now()
			d.giveBack(sl)
			d.yieldNow(sl)
			d.released(sl, s)
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
		case s.wants || s.holds != nil:
			s.cn.Send(Reply{Event: "error", Error: "this connection already holds or waits for a ticket"})
		default:
			s.wants, s.nonblock, s.since = true, m.req.NonBlock, time.Now()
			s.busyAt = time.Now().Add(4 * d.cfg.roundOr())
			d.queue = append(d.queue, s)
			d.serve()
		}
	case "release":
		if sl := s.holds; sl != nil && sl.holder == s {
			sl.holder, s.holds, sl.idleSince = nil, nil, time.Now()
			d.giveBack(sl)
			d.yieldNow(sl)
			d.released(sl, s)
			d.serve()
		}
	case "watch":
		d.pc.watchers[s] = true
		// The acknowledgement comes before any notice: a watcher that has
		// read it misses nothing that happens afterwards.
		s.cn.Send(Notice{Event: watching, By: uint32(d.mb.ID)})
	case "status":
		s.cn.Send(Reply{Event: "status", Status: d.status()})
	case "forget":
		d.forget(s, node.ID(m.req.Member))
	default:
		s.cn.Send(Reply{Event: "error", Error: fmt.Sprintf("unknown op %q", m.req.Op)})
	}
}

// status is the member's view: the machine's state, the book and the
// local clients.
func (d *daemon) status() json.RawMessage {
	var slots []any
	now := time.Now()
	for _, s := range d.slots {
		var st any
		var settled bool
		d.do(s, func() { st, settled = s.h.Status(), s.h.Machine().Settled(time.Now()) })
		sl := map[string]any{"slot": s.idx, "id": s.id, "addr": s.net.Addr(), "lent": s.holder != nil,
			"lends": s.lends, "settled": settled, "machine": st, "frames": s.drv.Stats()}
		if why := s.refusing(now); why != "" {
			sl["refused"], sl["refused_ms"] = why, now.Sub(s.refusedAt).Milliseconds()
		}
		slots = append(slots, sl)
	}
	out := map[string]any{"event": "status", "member": d.mb.ID, "addr": d.mb.Net.Addr(), "tickets": d.bk.size(), "slots": slots,
		"members": d.bk.others(), "gone": d.bk.gone(), "waiting": len(d.queue),
		"refound": map[string]any{"probes": d.slots[0].mc.probes, "refounds": d.slots[0].mc.refounds, "frozen": d.frozen()}}
	b, _ := json.Marshal(out)
	return b
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
