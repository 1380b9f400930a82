// Package mcastd is what `mcast run` and `mcast bench` do around a
// multicast machine on real sockets: stdin lines in batches, deliveries
// out, the end of input, and the logs `mcast check` reads. The protocols
// are pkg/mcast (the fixed group), pkg/mcast/group (the dynamic group) and
// pkg/gossip; this package is their service.
package mcastd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/gossip"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Member is the protocol side of a pipe: how lines go in, how events come
// out, and when a member whose input ended may leave.
type Member interface {
	// Submit hands a batch of lines to the machine, waiting while the
	// group lags (back-pressure on stdin rather than memory).
	Submit(ctx context.Context, lines [][]byte) error
	// End tells the machine the input ended.
	End(ctx context.Context) error
	// Handle prints what ev delivers and notes what it says.
	Handle(ev node.Event, p *Printer)
	// Finished reports whether the member may leave, its input having
	// ended after sent lines.
	Finished(sent uint64) bool
	// Written tells the machine how much of what it delivered has been
	// written out (the sum of mcast.Cost over the deliveries): the room
	// under its Backlog.
	Written(ctx context.Context, cost uint64) error
}

// Leaver is a Member that leaves its group on a signal instead of
// stopping at once.
type Leaver interface {
	Leave(ctx context.Context) error
}

// Quitter is a Member that tells its group it stops now when it must
// exit without leaving (stdout stalled): the others go on without
// waiting for it, even when it was half of their view.
type Quitter interface {
	Quit(ctx context.Context) error
	// Quitted reports whether ev says the member has quit.
	Quitted(ev node.Event) bool
}

// quitWait bounds how long a stalled member waits for its machine to
// quit (it first lets a view change it has answered end: 4 × --suspect).
const quitWait = 5 * time.Second

// Backlog is what a member may have delivered and not yet written out
// (mcast.Config.Backlog, in mcast.Cost): past it the machine stops
// delivering and acknowledging, and the group slows to this member's
// reader.
const Backlog = 4 << 20

// PipeConfig is how a pipe runs.
type PipeConfig struct {
	Base64  bool          // input and payloads in base64
	MaxLine int           // the longest input line, in payload bytes
	Linger  time.Duration // after the end of input (or a signal), wait at most this long for the group
	// Stall: a write to stdout blocked this long makes the member give up
	// with exit 76 (0: wait for ever). Until then the group waits for it.
	Stall time.Duration
	Log   *slog.Logger
}

// chunkMax is how much formatted output waits for a quiet moment before
// it goes to the writer anyway.
const chunkMax = 64 << 10

// queueMax bounds the output waiting for the writer. A machine with a
// Backlog stays far below it; past it (a gossip member, which has no flow
// control) the pipe stops taking events until the writer catches up.
const queueMax = 64 << 20

// Pipe runs a member's pipe until the input has ended and the member is
// finished (exit 0), --linger runs out after the end (exit 75), a signal,
// a transport failure, or stdout blocked for cfg.Stall (exit 76). Lines
// are submitted from their own goroutine: a request waits for the
// driver, which may be waiting for this loop to take its events. Output
// is written by the printer's Writer, never on this loop: what the
// machine delivers is bounded by its Backlog, which Written moves on.
func Pipe(live *cli.Running, m Member, in io.Reader, p *Printer, cfg PipeConfig) error {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wr := p.Writer()
	defer wr.Close()
	go func() {
		// Tell the machine what was written, as it is written.
		var told uint64
		for {
			select {
			case <-wr.Progress():
			case <-ctx.Done():
				return
			}
			if n := wr.Written(); n > told {
				if m.Written(ctx, n) != nil {
					return
				}
				told = n
			}
		}
	}()
	sent := make(chan uint64, 1)
	inputErr := make(chan error, 1)
	feedCtx, stopFeed := context.WithCancel(ctx) // a member that leaves on a signal stops taking lines
	defer stopFeed()
	go func() {
		n, err := Feed(feedCtx, in, cfg.Base64, cfg.MaxLine, func(batch [][]byte) error { return m.Submit(feedCtx, batch) })
		if err == nil {
			err = m.End(feedCtx)
		}
		if err != nil {
			inputErr <- err
			return
		}
		sent <- n
	}()
	var (
		total   uint64
		eof     bool
		leaving bool
		after   <-chan time.Time
		check   <-chan time.Time
	)
	if cfg.Stall > 0 {
		t := time.NewTicker(min(max(cfg.Stall/8, 10*time.Millisecond), time.Second))
		defer t.Stop()
		check = t.C
	}
	stalled := func() error {
		if q, ok := m.(Quitter); ok {
			qctx, qcancel := context.WithTimeout(ctx, quitWait)
			failed := make(chan struct{})
			go func() {
				if q.Quit(qctx) != nil {
					close(failed)
				}
			}()
		wait:
			for {
				select {
				case ev := <-live.Events:
					if q.Quitted(ev) {
						break wait
					}
				case <-failed:
					break wait
				case <-qctx.Done():
					log.Warn("the group was not told that this member quits", "waited", quitWait)
					break wait
				}
			}
			qcancel()
		}
		written, pending := wr.Lines()
		return cli.Exitf(cli.ExitLost, "stdout blocked for %v (--stall-timeout): leaving the group with %d lines written and %d more not written; "+
			"what the group delivers from now on is not delivered here", cfg.Stall, written, pending)
	}
	// drain waits until everything formatted is written (or stdout stays
	// blocked for cfg.Stall).
	drain := func() error {
		p.Flush()
		wr.Close()
		for {
			select {
			case <-wr.done:
				if err := wr.Err(); err != nil {
					return cli.Exitf(cli.ExitUnavailable, "writing stdout: %v", err)
				}
				return nil
			case <-check:
				if wr.Stalled(time.Now()) > cfg.Stall {
					return stalled()
				}
			}
		}
	}
	finish := func() error {
		p.Exit(total)
		if err := drain(); err != nil {
			return err
		}
		if f, ok := m.(interface{ Lost() error }); ok {
			return f.Lost()
		}
		return nil
	}
	for {
		select {
		case err := <-inputErr:
			if errors.Is(err, context.Canceled) {
				continue
			}
			drain() // what was delivered before, then the input's error
			return err
		case total = <-sent:
			eof = true
			log.Info("end of input", "sent", total)
			if m.Finished(total) {
				return finish()
			}
			after = time.After(cfg.Linger)
		case <-after:
			// Not a clean end: the log gets no 'exit' line, and the exit
			// code says the group had not finished.
			log.Error("--linger ran out before the group had finished", "sent", total, "linger", cfg.Linger)
			if err := drain(); err != nil {
				return err
			}
			return cli.Exitf(cli.ExitBusy, "--linger %v ran out before the group had finished: some of what this member sent or holds may not be "+
				"delivered or stable at every member, and it may lack messages others sent (%d lines sent)", cfg.Linger, total)
		case <-check:
			if wr.Stalled(time.Now()) > cfg.Stall {
				return stalled()
			}
		case ev := <-live.Events:
			m.Handle(ev, p)
			if f, ok := m.(interface{ Err() error }); ok && f.Err() != nil {
				drain()
				return f.Err()
			}
			if (eof || leaving) && m.Finished(total) {
				return finish()
			}
			if len(live.Events) == 0 || p.Buffered() >= chunkMax {
				// Nothing else waiting: a quiet group's lines appear at
				// once, a busy one's leave in large writes.
				if err := p.Flush(); err != nil {
					return cli.Exitf(cli.ExitUnavailable, "writing stdout: %v", err)
				}
			}
			for wr.Queued() > queueMax && wr.Err() == nil {
				select {
				case <-wr.Room():
				case <-check:
					if wr.Stalled(time.Now()) > cfg.Stall {
						return stalled()
					}
				}
			}
		case s := <-live.Signals:
			if l, ok := m.(Leaver); ok && !leaving {
				// Leave like at the end of input (a second signal, or
				// --linger, cuts it short).
				leaving = true
				stopFeed()
				log.Info("signal: leaving the group", "signal", s)
				go func() {
					if err := l.Leave(ctx); err != nil && !errors.Is(err, context.Canceled) {
						inputErr <- err
					}
				}()
				after = time.After(cfg.Linger)
				continue
			}
			log.Info("signal: stopping", "signal", s)
			return &cli.ExitError{Code: cli.SignalCode(s)}
		case err := <-live.Done:
			drain()
			return cli.Failed(err)
		}
	}
}

// Multicast is a pkg/mcast machine behind a pipe.
type Multicast struct {
	Drv *driver.Driver[mcast.Msg]
	room
	done bool
}

// NewMulticast wraps drv.
func NewMulticast(drv *driver.Driver[mcast.Msg]) *Multicast {
	return &Multicast{Drv: drv, room: newRoom()}
}

// Submit sends a batch, waiting for a RoomEvent while the group lags.
func (m *Multicast) Submit(ctx context.Context, lines [][]byte) error {
	return m.submit(ctx, func() error {
		return m.Drv.Request(ctx, mcast.Msg{Type: mcast.MsgSend, Items: items(lines)})
	})
}

// room is a member's wait for room in a full send window: the machine
// refuses a send with ErrFull, and a RoomEvent lets it try again.
type room chan struct{}

func newRoom() room { return make(room, 1) }

// submit runs send until it is not refused with ErrFull, waiting for
// Room between tries.
func (r room) submit(ctx context.Context, send func() error) error {
	for {
		err := send()
		if !errors.Is(err, mcast.ErrFull) {
			return err
		}
		select {
		case <-r:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Room lets a waiting Submit try again.
func (r room) Room() {
	select {
	case r <- struct{}{}:
	default:
	}
}

// items are lines as multicast items.
func items(lines [][]byte) []mcast.Item {
	its := make([]mcast.Item, len(lines))
	for i, l := range lines {
		its[i].Payload = l
	}
	return its
}

// Written reports what the writer wrote (MsgWritten).
func (m *Multicast) Written(ctx context.Context, cost uint64) error {
	return m.Drv.Request(ctx, mcast.Msg{Type: mcast.MsgWritten, Written: cost})
}

// End tells the machine the input ended.
func (m *Multicast) End(ctx context.Context) error {
	return m.Drv.Request(ctx, mcast.Msg{Type: mcast.MsgEnd})
}

// Handle prints deliveries and own sends, and notes room and done.
func (m *Multicast) Handle(ev node.Event, p *Printer) {
	switch ev := ev.(type) {
	case mcast.DeliverEvent:
		p.Deliver(ev)
	case mcast.SendEvent:
		p.Send(ev)
	case mcast.RoomEvent:
		m.Room()
	case mcast.DoneEvent:
		m.done = true
	}
}

// Finished: every unsuspected member has ended its input and everyone
// delivered the same (DoneEvent).
func (m *Multicast) Finished(uint64) bool { return m.done }

// Gossip is a pkg/gossip machine behind a pipe.
type Gossip struct {
	Drv  *driver.Driver[gossip.Msg]
	Self node.ID
	own  uint64 // own lines taken by the machine
	idle bool
}

// Submit hands a batch to the machine.
func (g *Gossip) Submit(ctx context.Context, lines [][]byte) error {
	evs := make([]gossip.Event, len(lines))
	for i, l := range lines {
		evs[i].Payload = l
	}
	return g.Drv.Request(ctx, gossip.Msg{Type: gossip.MsgBroadcast, Events: evs})
}

// Written: a gossip machine delivers what it gets (a reader that falls
// behind delays the member's rounds; pkg/gossip's buffers bound the loss).
func (g *Gossip) Written(context.Context, uint64) error { return nil }

// End: gossip has nothing to tell the group.
func (g *Gossip) End(context.Context) error { return nil }

// Handle prints deliveries (own ones as sends) and notes idleness.
func (g *Gossip) Handle(ev node.Event, p *Printer) {
	switch ev := ev.(type) {
	case gossip.DeliverEvent:
		if ev.Origin == g.Self {
			p.Send(mcast.SendEvent{Seq: ev.Seq, Payload: ev.Payload})
			g.own++
			g.idle = false
		} else {
			p.Deliver(mcast.DeliverEvent{Sender: ev.Origin, Seq: ev.Seq, Payload: ev.Payload})
		}
	case gossip.IdleEvent:
		g.idle = true
	}
}

// Finished: every line taken and pushed for all its rounds.
func (g *Gossip) Finished(sent uint64) bool { return sent == 0 || g.own >= sent && g.idle }
