package main

import (
	"bufio"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/gossip"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// runGossip is 'mcast run --order gossip': pkg/gossip instead of pkg/mcast,
// the same input, output and logs. At end of input the member stays until
// its lines have been pushed for all their rounds (or --linger).
func runGossip(c *ucli.Context) error {
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	self, cm := mb.ID, mb.Common
	m, err := gossip.New(gossip.Config{ID: self, Peers: cli.IDs(cm.Peers), Period: c.Duration("period"),
		Rand: rand.New(rand.NewPCG(mb.Incarnation, uint64(self)))})
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	drv := driver.New[gossip.Msg](m, gossip.Codec{Fam: wire.FamilyMcast}, mb.Net, driver.Config{Framer: mb.Framer, Log: cm.Log})
	live, err := mb.Start(drv, "order", "gossip")
	if err != nil {
		return err
	}
	defer live.Stop()
	stdout := bufio.NewWriterSize(os.Stdout, 64<<10)
	defer stdout.Flush()
	out := printer{out: cli.NewOutput(stdout, c.Bool(cli.FlagJSON)), member: self, b64: c.Bool("base64")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sent := make(chan uint64, 1)
	inputErr := make(chan error, 1)
	go func() {
		n, err := feed(ctx, os.Stdin, c.Bool("base64"), func(batch [][]byte) error {
			evs := make([]gossip.Event, len(batch))
			for i, p := range batch {
				evs[i].Payload = p
			}
			return drv.Request(ctx, gossip.Msg{Type: gossip.MsgBroadcast, Events: evs})
		})
		if err != nil {
			inputErr <- err
			return
		}
		sent <- n
	}()
	var (
		total  uint64
		own    uint64 // own lines delivered (taken by the machine)
		eof    bool
		idle   bool
		linger <-chan time.Time
	)
	// Done: input ended, every line taken, and pushed for all its rounds.
	quiet := func() bool { return eof && own >= total && idle }
	finish := func() error {
		out.exit(total)
		return stdout.Flush()
	}
	for {
		select {
		case err := <-inputErr:
			if errors.Is(err, context.Canceled) {
				continue
			}
			return err
		case total = <-sent:
			eof = true
			if total == 0 || quiet() {
				return finish()
			}
			linger = time.After(c.Duration("linger"))
		case <-linger:
			cm.Log.Warn("--linger ran out before this member's lines were pushed for all their rounds", "sent", total)
			return finish()
		case ev := <-live.Events:
			switch ev := ev.(type) {
			case gossip.DeliverEvent:
				if ev.Origin == self {
					out.send(mcast.SendEvent{Seq: ev.Seq, Payload: ev.Payload})
					own++
					idle = false
				} else {
					out.deliver(mcast.DeliverEvent{Sender: ev.Origin, Seq: ev.Seq, Payload: ev.Payload})
				}
			case gossip.IdleEvent:
				idle = true
				if quiet() {
					return finish()
				}
			}
			if len(live.Events) == 0 {
				if err := stdout.Flush(); err != nil {
					return cli.Exitf(cli.ExitUnavailable, "writing stdout: %v", err)
				}
			}
		case s := <-live.Signals:
			return &cli.ExitError{Code: cli.SignalCode(s)}
		case err := <-live.Done:
			return cli.Failed(err)
		}
	}
}
