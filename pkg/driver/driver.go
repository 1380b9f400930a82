package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/roundtable-go/roundtable/pkg/clock"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Control message types (wire.FamilyControl). Append only.
const (
	ControlStatusQuery uint8 = 1
	ControlStatusReply uint8 = 2
	// ControlTool and above are the tools' own (Config.Control).
	ControlTool uint8 = 16
)

// Config configures a Driver.
type Config struct {
	Framer *wire.Framer // required: seals and opens every frame
	Clock  clock.Clock  // default clock.System
	Log    *slog.Logger // default: discard
	// Control, when set, receives the control-family frames other than
	// status queries and replies (a tool's own, from ControlTool up), on
	// the driver goroutine, after the Framer has authenticated them. It
	// must not block. Without it they are counted as wrong family.
	Control func(from node.ID, typ uint8, body []byte)
	// Seen, when set, sees the header and packet of every frame the
	// Framer accepted, on the driver goroutine, before it is handled: a
	// tool that learns its peers' addresses as it runs learns them here,
	// from authenticated frames only. It must not block.
	Seen func(h wire.Header, p transport.Packet)
}

// Counters are the driver's own drop counts, beside the Framer's.
type Counters struct {
	WrongFamily, Undecodable, Rejected, SendErrors atomic.Uint64
	Undersized                                     atomic.Uint64 // unauthenticated status queries too small for even a truncated answer
}

// Driver owns one machine on one transport.
type Driver[M any] struct {
	m     node.Machine[M]
	codec wire.Codec[M]
	tr    transport.Transport
	cfg   Config
	reqs  chan request[M]
	Counters

	// Rejections are logged at most once a second, with how many went
	// unlogged: a flood of bad messages must not become a flood of log
	// lines (10,000 frames from a non-member once wrote 10,000 lines).
	lastWarn time.Time
	unwarned int
	// Send failures likewise (under the driver's lock).
	lastSendWarn  time.Time
	unwarnedSends int
}

type request[M any] struct {
	msg  M
	fn   func() // Do: run on the driver goroutine instead of stepping msg
	done chan error
}

// New returns a driver; call Run to start it.
func New[M any](m node.Machine[M], codec wire.Codec[M], tr transport.Transport, cfg Config) *Driver[M] {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Driver[M]{m: m, codec: codec, tr: tr, cfg: cfg, reqs: make(chan request[M])}
}

// Request hands the machine a local request (an Envelope from itself) and
// returns once the machine has processed it and its resulting messages
// have been sent.
func (d *Driver[M]) Request(ctx context.Context, msg M) error {
	return d.submit(ctx, request[M]{msg: msg, done: make(chan error, 1)})
}

func (d *Driver[M]) submit(ctx context.Context, r request[M]) error {
	select {
	case d.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Do runs fn on the driver goroutine, where it may read the machine's
// state, and returns once it has run.
func (d *Driver[M]) Do(ctx context.Context, fn func()) error {
	return d.submit(ctx, request[M]{fn: fn, done: make(chan error, 1)})
}

// SendControl seals a control-family frame of a tool's own type
// (ControlTool and above) and sends it to a peer. It is safe from any
// goroutine: sealing takes an atomic sequence number, and the transports
// serialise their writes.
func (d *Driver[M]) SendControl(to node.ID, typ uint8, body []byte) error {
	if typ < ControlTool {
		return fmt.Errorf("driver: control type %d is the driver's own", typ)
	}
	frame, err := d.cfg.Framer.Seal(wire.FamilyControl, typ, to, body)
	if err == nil {
		err = d.tr.Send(to, frame)
	}
	if err != nil {
		d.SendErrors.Add(1)
	}
	return err
}

// Stats returns every counter by name.
func (d *Driver[M]) Stats() map[string]uint64 {
	s := d.cfg.Framer.Snapshot()
	s["dropped_wrong_family"] = d.WrongFamily.Load()
	s["dropped_undecodable"] = d.Undecodable.Load()
	s["rejected_by_protocol"] = d.Rejected.Load()
	s["send_errors"] = d.SendErrors.Load()
	s["unanswered_small_queries"] = d.Undersized.Load()
	return s
}

// Probe answers what a status query would (this member's counters and
// its machine's status), read on the driver goroutine: it fails when the
// loop has not taken it up before ctx ends, which is how a health check
// tells a turning loop from a stuck one.
func (d *Driver[M]) Probe(ctx context.Context) (StatusReply, error) {
	rep := StatusReply{ID: d.cfg.Framer.Self(), Addr: d.tr.Addr(), Sealed: d.cfg.Framer.Sealed()}
	err := d.Do(ctx, func() {
		rep.Counters = d.Stats()
		if s, ok := d.m.(node.Statuser); ok {
			rep.Status, _ = json.Marshal(s.Status())
		}
	})
	return rep, err
}

// Run drives the machine until ctx is cancelled; emit receives every
// event, in order. The machine runs on one goroutine at a time: frames
// are handled on the goroutine that reads them (one wake-up per frame
// instead of two: reader, then driver), timers and requests on the
// driver's own, under one lock, so fn of Do and emit see the machine
// alone. Run closes the transport.
func (d *Driver[M]) Run(ctx context.Context, emit func(node.Event)) error {
	g, ctx := errgroup.WithContext(ctx)
	self := d.cfg.Framer.Self()
	var mu sync.Mutex
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var wake time.Time
	flush := func() {
		r := d.m.Ready()
		for _, env := range r.Msgs {
			d.send(env)
		}
		for _, ev := range r.Events {
			emit(ev)
		}
		if !r.Wake.Equal(wake) {
			wake = r.Wake
			timer.Stop()
			if !wake.IsZero() {
				timer.Reset(max(wake.Sub(d.cfg.Clock.Now()), 0))
			}
		}
	}
	// due runs a timer that is already overdue before a frame or a
	// request is handled. After a stall of the whole process (SIGSTOP, a
	// frozen container, a starved host) the timer's wake-up and the next
	// frame or request are ready together and the select below picks
	// either; without this a request could be answered from the
	// machine's state as of before the stall (a status that still names
	// a peer silent for minutes as alive), and a frame handled before
	// the timers it came after.
	due := func() {
		if !wake.IsZero() && !d.cfg.Clock.Now().Before(wake) {
			wake = time.Time{}
			d.m.Tick(d.cfg.Clock.Now())
		}
	}
	mu.Lock()
	d.m.Tick(d.cfg.Clock.Now())
	flush()
	mu.Unlock()
	g.Go(func() error {
		for {
			p, err := d.tr.Recv()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return nil
				}
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			mu.Lock()
			due()
			d.receive(p, self)
			flush()
			mu.Unlock()
		}
	})
	g.Go(func() error {
		defer d.tr.Close()
		for {
			select {
			case <-ctx.Done():
				return nil
			case r := <-d.reqs:
				mu.Lock()
				due()
				var err error
				if r.fn != nil {
					r.fn()
				} else {
					err = d.m.Step(d.cfg.Clock.Now(), node.Envelope[M]{From: self, To: self, Msg: r.msg})
				}
				flush() // fn may have stepped the machine
				mu.Unlock()
				r.done <- err
			case <-timer.C:
				mu.Lock()
				wake = time.Time{}
				d.m.Tick(d.cfg.Clock.Now())
				flush()
				mu.Unlock()
			}
		}
	})
	return g.Wait()
}

func (d *Driver[M]) send(env node.Envelope[M]) {
	typ, payload, err := d.codec.Marshal(env.Msg)
	var frame []byte
	if err == nil {
		frame, err = d.cfg.Framer.Seal(d.codec.Family(), typ, env.To, payload)
	}
	if err != nil {
		d.SendErrors.Add(1)
		d.sendFailed(env.To, err, true)
		return
	}
	if err := d.tr.Send(env.To, frame); err != nil {
		d.SendErrors.Add(1)
		d.sendFailed(env.To, err, false)
	}
}

// sendFailed logs a message that was not sent, at most once a second
// with how many went unlogged (a peer that is down fails every send): at
// error level when it could not be framed (too large, or not encodable:
// it never will be), at warning level when the transport failed.
func (d *Driver[M]) sendFailed(to node.ID, err error, framing bool) {
	now := d.cfg.Clock.Now()
	if now.Sub(d.lastSendWarn) < time.Second {
		d.unwarnedSends++
		return
	}
	log := d.cfg.Log.Warn
	if framing {
		log = d.cfg.Log.Error
	}
	log("send failed", "to", to, "err", err, "more_since_last", d.unwarnedSends)
	d.lastSendWarn, d.unwarnedSends = now, 0
}

func (d *Driver[M]) receive(p transport.Packet, self node.ID) {
	h, payload, err := d.cfg.Framer.Open(p.Data)
	if err != nil {
		d.cfg.Log.Debug("frame dropped", "err", err, "from", h.From)
		return
	}
	if d.cfg.Seen != nil {
		d.cfg.Seen(h, p)
	}
	if h.Family == wire.FamilyControl {
		if h.Type >= ControlTool && d.cfg.Control != nil {
			d.cfg.Control(h.From, h.Type, payload)
			return
		}
		d.control(p, h)
		return
	}
	if h.Family != d.codec.Family() {
		d.WrongFamily.Add(1)
		return
	}
	msg, err := d.codec.Unmarshal(h.Type, payload)
	if err != nil {
		d.Undecodable.Add(1)
		d.cfg.Log.Debug("undecodable message", "from", h.From, "err", err)
		return
	}
	if err := d.m.Step(d.cfg.Clock.Now(), node.Envelope[M]{From: h.From, To: self, Msg: msg}); err != nil {
		d.Rejected.Add(1)
		d.warn(h.From, err)
	}
}

// warn logs a rejected message, at most once a second (on the driver
// goroutine, whose clock it reads).
func (d *Driver[M]) warn(from node.ID, err error) {
	now := d.cfg.Clock.Now()
	if now.Sub(d.lastWarn) < time.Second {
		d.unwarned++
		return
	}
	if d.unwarned > 0 {
		d.cfg.Log.Warn("message rejected", "from", from, "err", err, "more_since_last", d.unwarned)
	} else {
		d.cfg.Log.Warn("message rejected", "from", from, "err", err)
	}
	d.lastWarn, d.unwarned = now, 0
}

// StatusReply is the answer to a status query.
type StatusReply struct {
	ID       node.ID           `json:"id"`
	Addr     string            `json:"addr"`
	Sealed   bool              `json:"sealed"`
	Counters map[string]uint64 `json:"counters"`
	Status   json.RawMessage   `json:"status,omitempty"`
	// Truncated: the query was too small for the answer, which an
	// unauthenticated member never makes larger than the query.
	Truncated bool `json:"truncated,omitempty"`
}

func (d *Driver[M]) control(p transport.Packet, h wire.Header) {
	if h.Type != ControlStatusQuery || p.Reply == nil {
		d.WrongFamily.Add(1)
		return
	}
	rep := StatusReply{ID: d.cfg.Framer.Self(), Addr: d.tr.Addr(), Sealed: d.cfg.Framer.Sealed(), Counters: d.Stats()}
	if s, ok := d.m.(node.Statuser); ok {
		rep.Status, _ = json.Marshal(s.Status())
	}
	frame, err := d.seal(h.From, rep)
	if err == nil && !d.cfg.Framer.Sealed() && len(frame) > len(p.Data) {
		// Unauthenticated, the query's source address may be forged: the
		// answer must not be larger than the query, or it amplifies an
		// attack on that address. The asker pads its query and asks again
		// (Query does) when it finds the answer truncated.
		frame, err = d.seal(h.From, StatusReply{ID: rep.ID, Truncated: true})
		if err == nil && len(frame) > len(p.Data) {
			d.Undersized.Add(1)
			return
		}
	}
	if err == nil {
		err = p.Reply(frame)
	}
	if err != nil {
		d.SendErrors.Add(1)
	}
}

func (d *Driver[M]) seal(to node.ID, rep StatusReply) ([]byte, error) {
	body, err := json.Marshal(rep)
	if err != nil {
		return nil, err
	}
	return d.cfg.Framer.Seal(wire.FamilyControl, ControlStatusReply, to, body)
}

// Query asks every peer for its status over tr and collects the answers
// that arrive within timeout. The framer must use an ID that is not a
// member's. Query closes tr.
func Query(ctx context.Context, f *wire.Framer, tr transport.Transport, peers []node.ID, timeout time.Duration) (map[node.ID]StatusReply, error) {
	defer tr.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	go func() { <-ctx.Done(); tr.Close() }()
	// Unsealed, a member answers with no more bytes than the query has: the
	// query is padded, and padded to the largest frame for members whose
	// first answer came back truncated.
	pad := 0
	if !f.Sealed() {
		pad = 2048
	}
	ask := func(p node.ID, pad int) error {
		frame, err := f.Seal(wire.FamilyControl, ControlStatusQuery, p, make([]byte, pad))
		if err != nil {
			return err
		}
		_ = tr.Send(p, frame) // an unreachable peer simply does not answer
		return nil
	}
	for _, p := range peers {
		if err := ask(p, pad); err != nil {
			return nil, err
		}
	}
	out := map[node.ID]StatusReply{}
	retried := map[node.ID]bool{}
	for len(out) < len(peers) {
		p, err := tr.Recv()
		if err != nil {
			break
		}
		h, body, err := f.Open(p.Data)
		if err != nil || h.Family != wire.FamilyControl || h.Type != ControlStatusReply {
			continue
		}
		var rep StatusReply
		if json.Unmarshal(body, &rep) != nil || rep.ID != h.From || !slices.Contains(peers, h.From) {
			continue
		}
		if rep.Truncated {
			if !retried[h.From] {
				retried[h.From] = true
				_ = ask(h.From, wire.MaxFrame-wire.HeaderSize)
			}
			continue
		}
		out[h.From] = rep
	}
	if len(out) == 0 && ctx.Err() == nil {
		return out, fmt.Errorf("driver: transport closed")
	}
	return out, nil
}
