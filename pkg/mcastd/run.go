package mcastd

import (
	"context"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"maps"
	"os"
	"runtime"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/gossip"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// oneP runs the member on one P unless GOMAXPROCS says otherwise, as
// lockd's daemon does: its work is one machine on one driver goroutine,
// and with a second P every hand-off between the socket reader, the
// driver and the pipe wakes another thread. Measured with
// scripts/bench-mcast.sh step 6 on a 2-core host (docs/mcast.md, "One P
// per member"): TOTEM's median at 1,000/s from 9 members 1,303–1,538 µs
// with the default against 569–692 µs on one P, and no flood slower.
// It returns the number of Ps the member runs on.
func oneP() int {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	return runtime.GOMAXPROCS(0)
}

// RunConfig is `mcast run` over a fixed group: stdin to the group, what
// the member delivers to stdout.
type RunConfig struct {
	// Multicast configures the machine (its ID, Peers and Backlog are set
	// by Run), unless Gossip is set.
	Multicast mcast.Config
	// Gossip, when set, runs probabilistic broadcast instead (its ID,
	// Peers and a nil Rand are set by Run).
	Gossip *gossip.Config
	// Pipe: how the pipe runs (its MaxLine is set by Run from the order).
	Pipe PipeConfig
	JSON bool // JSON lines on stdout
}

// Run runs one member of a fixed group until Pipe ends it.
func Run(mb *cli.Member, cfg RunConfig) error {
	oneP()
	var (
		live   *cli.Running
		member Member
		order  = cfg.Multicast.Order.String()
	)
	if g := cfg.Gossip; g != nil {
		mb.Identify(&g.ID, &g.Peers, &g.Rand)
		m, err := cli.Build(gossip.New(*g))
		if err != nil {
			return err
		}
		drv, run, err := cli.StartMachine[gossip.Msg](mb, m, gossip.Codec{Fam: wire.FamilyMcast}, "order", "gossip")
		if err != nil {
			return err
		}
		live, member, cfg.Pipe.MaxLine = run, &Gossip{Drv: drv, Self: mb.ID}, gossip.MaxPayload
	} else {
		mc := cfg.Multicast
		mc.ID, mc.Peers, mc.Backlog = mb.ID, cli.IDs(mb.Peers), Backlog
		m, err := cli.Build(mcast.New(mc))
		if err != nil {
			return err
		}
		drv, run, err := cli.StartMachine[mcast.Msg](mb, m, mcast.Codec{}, "order", order)
		if err != nil {
			return err
		}
		live, member, cfg.Pipe.MaxLine = run, NewMulticast(drv), mcast.PayloadLimit(mc.Order, len(mb.Peers))
	}
	defer live.Stop()
	out := NewPrinter(os.Stdout, mb.ID, cfg.JSON, cfg.Pipe.Base64)
	return Pipe(live, member, os.Stdin, out, cfg.Pipe)
}

// GroupRunConfig is `mcast run --views` (or --order total): one member of
// a dynamic group.
type GroupRunConfig struct {
	Group          group.Config // the machine (its Backlog is set by RunGroup)
	Order          string       // --order as given, for the start log
	ExitOnMinority bool         // leave when this member's side is not the primary
	Pipe           PipeConfig   // its MaxLine is set by RunGroup
	JSON           bool
}

// RunGroup runs one member of a dynamic group until Pipe ends it.
func RunGroup(mb *cli.Member, cfg GroupRunConfig) error {
	oneP()
	gc := cfg.Group
	gc.Backlog = Backlog
	g, err := group.New(gc)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	mb.NotifyReadyOn = "view" // a member serves once it is in a view
	drv, live, err := cli.StartMachine[group.Msg](mb, g, group.Codec{}, "order", cfg.Order, "views", true, "total", gc.Total, "safe", gc.Safe, "evs", gc.EVS)
	if err != nil {
		return err
	}
	defer live.Stop()
	out := NewPrinter(os.Stdout, mb.ID, cfg.JSON, cfg.Pipe.Base64)
	member := NewGroup(drv)
	member.ExitOnMinority = cfg.ExitOnMinority
	member.Log = cfg.Pipe.Log
	cfg.Pipe.MaxLine = mcast.MaxPayload
	return Pipe(live, member, os.Stdin, out, cfg.Pipe)
}

// counters reads a machine's counters on its driver's goroutine (do);
// a driver that has stopped gives none within the second.
func counters(do func(context.Context, func()) error, stats func() map[string]uint64) func() map[string]uint64 {
	return func() map[string]uint64 {
		var c map[string]uint64
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if do(ctx, func() { c = maps.Clone(stats()) }) != nil {
			return nil
		}
		return c
	}
}

// RunBench runs `mcast bench`: one member flooding a fixed group (cfg's
// Order), or with cfg.Group a dynamic group configured by gcfg.
func RunBench(mb *cli.Member, cfg BenchConfig, gcfg group.Config) error {
	oneP()
	cfg.Self = mb.ID
	var (
		live   *cli.Running
		member BenchMember
	)
	if file := os.Getenv(TraceEnv); file != "" {
		tr := newTracer(mb.Net)
		mb.Net, cfg.trace = tr, tr
		defer func() {
			if err := tr.write(file); err != nil {
				mb.Log.Warn("writing the frame trace", "err", err)
			}
		}()
	}
	if cfg.Group {
		g, err := group.New(gcfg)
		if err != nil {
			return cli.Exitf(cli.ExitUsage, "%v", err)
		}
		cfg.Total, cfg.Members = gcfg.Total, max(gcfg.StartWith, 1)
		drv, run, err := cli.StartMachine[group.Msg](mb, g, group.Codec{}, "order", "total", "total", gcfg.Total, "size", cfg.Size, "count", cfg.Count, "rate", cfg.Rate)
		if err != nil {
			return err
		}
		live, member = run, NewGroup(drv)
		cfg.counters = counters(drv.Do, g.Stats)
	} else {
		m, err := cli.Build(mcast.New(mcast.Config{ID: mb.ID, Peers: cli.IDs(mb.Peers), Order: cfg.Order}))
		if err != nil {
			return err
		}
		drv, run, err := cli.StartMachine[mcast.Msg](mb, m, mcast.Codec{}, "order", cfg.Order, "size", cfg.Size, "count", cfg.Count, "rate", cfg.Rate)
		if err != nil {
			return err
		}
		live, member = run, NewMulticast(drv)
		cfg.counters = counters(drv.Do, m.Stats)
	}
	defer live.Stop()
	return Bench(live, member, cfg, mb.Out, mb.Log)
}
