// Command mcast is group communication for scripts: lines on stdin are
// multicast to the group, and every member prints what it delivers on
// stdout, in the order the chosen guarantee promises. See pkg/mcast.
package main

import (
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"log/slog"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/cpuprof"
	"github.com/roundtable-go/roundtable/pkg/gossip"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/mcastd"
)

const tool = "mcast"

var runFlags = cli.WithEnv(tool, append(append(cli.NodeFlags(), groupFlags...),
	orderFlag,
	lingerFlag,
	realtimeFlag,
	&ucli.BoolFlag{Name: "base64", Usage: "input lines are base64 and payloads are printed in base64 (binary-safe)"},
	&ucli.DurationFlag{Name: "period", DefaultText: "50ms; 20ms with --views", Usage: "how often members exchange digests (what each has received), which drives repair; with --views the heartbeat"},
	&ucli.DurationFlag{Name: "suspect", DefaultText: "20 × --period (1s); with --views 8 × --period (160ms)", Usage: "a member silent this long no longer holds up 'delivered by all' at end of input; with --views it is taken out of the view"},
	&ucli.DurationFlag{Name: "stall-timeout", Value: 30 * time.Second, Usage: "when a write to stdout has been blocked this long, give up: say so on stderr and exit 76, leaving the group (0: wait for ever); until then the group slows to this member's reader"},
	&ucli.BoolFlag{Name: "tree", Usage: "with --order gossip: spread along a fixed tree of the members, batched per --period, instead of to random members (fewer messages; see docs/mcast.md)"},
	&ucli.BoolFlag{Name: "exit-on-minority", Usage: "with --views: exit 69 when cut off with a minority of the view, instead of waiting for the majority"},
))

// orderFlag is shared by run and bench: MCAST_ORDER means one thing.
var orderFlag = &ucli.StringFlag{Name: "order", Value: "fifo", Usage: "unordered, fifo, causal, gossip (run only) or total (one order for every member, in a dynamic group; see --total)"}

// realtimeFlag is --realtime, shared by run and bench: off by default
// (pkg/cli RealtimeOptInFlag says why).
var realtimeFlag = cli.RealtimeOptInFlag()

var lingerFlag = &ucli.DurationFlag{Name: "linger", Value: 30 * time.Second, Usage: "at the end, wait at most this long for the group to finish"}

var checkFlags = []ucli.Flag{
	&ucli.StringFlag{Name: "order", Value: "fifo", Usage: "the order the run promised: unordered, fifo, causal or total"},
	&ucli.BoolFlag{Name: "views", Usage: "the logs of a dynamic group (mcast run --views; implied by --order total)"},
	partitionsFlag,
}

func main() { cli.Main(newApp()) }

// newApp is the command line.
func newApp() *ucli.App {
	return &ucli.App{
		Name:  tool,
		Usage: "reliable FIFO, causal and total-order multicast for shell pipes, with membership views",
		Commands: []*ucli.Command{
			{
				Name:  "run",
				Usage: "multicast each line of stdin; print each delivery on stdout",
				Description: `Runs one member of a fixed group. Each line of stdin is one message; each
delivery is one line on stdout: '<sender> <seq> <payload>' (with --views
'<sender> <view>.<seq> <payload>': numbers start again in every view, and
a message is delivered in its own; with --json an object with member,
sender, seq, the vector timestamp under causal order, the view and the
sender's incarnation in a dynamic group, and payload). A member delivers its own lines as it sends them, and prints
them then (with --json as 'send' events, from which 'mcast check' rebuilds
happens-before).

Orders: unordered (reliable: nothing lost, duplicated or invented among
members that do not crash, even when a sender crashes mid-multicast), fifo
(each sender's lines in the order sent), causal (a line after everything
its sender had seen when it wrote it), gossip (for big groups: each line
pushed to a few random members per round, gaps pulled; every member gets
it with high probability, in no particular order; --period is the round;
--tree spreads along a fixed tree of the members instead, batched per
round, with digests riding on the pushes to repair cut edges).

A line is its bytes up to the newline (a carriage return included) and may
be at most 61,248 bytes (what one sealed frame carries; under causal order
9 bytes less per member, under gossip 32,768); a longer one stops mcast
with exit 64 before anything of it is sent: split it, or compress it and
use --base64. At end of input the member stays until every member it does
not suspect has ended its input too and everyone has delivered the same,
then exits 0: a group whose inputs all end leaves nothing undelivered. If
--linger runs out first, it exits 75.

A slow reader of stdout slows the group down (flow control) rather than
losing lines; a write to stdout blocked for --stall-timeout makes the
member leave with exit 76, saying what it did not write.

Examples:
   seq 1 5 | mcast run --id 1 --peers 1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003
   mcast run --id 2 --peers @peers.txt --order causal --json > 2.log
   tar c dir | base64 -w 1000 | mcast run --id 3 --peers @peers.txt --base64 --key-file cluster.key`,
				Flags:  runFlags,
				Action: run,
			},
			{
				Name:      "check",
				Usage:     "check the --json logs of a run: integrity, agreement and order",
				ArgsUsage: "LOG...",
				Description: `Reads the 'mcast run --json' output of every member (one file each) and
checks integrity (nothing delivered twice, nothing invented), agreement and
validity among the members that did not crash (a log that does not end with
its 'exit' line is a crashed member's), and with --order fifo or causal the
order, with happens-before rebuilt from the logs. Exits 0, or 1 with the
smallest counterexample (the violation shown by the fewest log lines),
followed by those lines as FILE:LINE.

Examples:
   mcast check --order causal 1.log 2.log 3.log`,
				Flags:  checkFlags,
				Action: check,
			},
			benchCommand(),
			statusCommand(),
		},
	}
}

func run(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "run takes no arguments, got %q (the lines come on stdin)", c.Args().First())
	}
	for _, f := range []string{"period", "suspect"} {
		if c.IsSet(f) && c.Duration(f) <= 0 {
			return cli.Exitf(cli.ExitUsage, "--period and --suspect must be positive")
		}
	}
	if c.Duration("linger") < 0 || c.Duration("stall-timeout") < 0 {
		return cli.Exitf(cli.ExitUsage, "--linger and --stall-timeout must not be negative")
	}
	gossipOrder := c.String("order") == "gossip"
	if c.Bool("tree") && !gossipOrder {
		return cli.Exitf(cli.ExitUsage, "--tree goes with --order gossip")
	}
	if isGroup(c) {
		return runGroup(c)
	}
	for _, f := range append(groupOnly, "exit-on-minority") {
		if c.IsSet(f) {
			return cli.Exitf(cli.ExitUsage, "--%s goes with --views (or --order total)", f)
		}
	}
	var order mcast.Order
	if !gossipOrder {
		var err error
		if order, err = mcast.ParseOrder(c.String("order")); err != nil {
			return cli.Exitf(cli.ExitUsage, "--order: %v (or gossip)", err)
		}
	}
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	cli.ApplyRealtime(c, mb.Log)
	cfg := mcastd.RunConfig{Multicast: mcast.Config{Order: order, Period: c.Duration("period"), Suspect: c.Duration("suspect")},
		Pipe: pipeConfig(c, mb.Log), JSON: c.Bool(cli.FlagJSON)}
	if gossipOrder {
		period := 50 * time.Millisecond // as the other fixed-group orders
		if c.IsSet("period") {
			period = c.Duration("period")
		}
		cfg.Gossip = &gossip.Config{Period: period, Tree: c.Bool("tree")}
	}
	return mcastd.Run(mb, cfg)
}

// pipeConfig is the pipe's part of the command line (the service sets
// MaxLine from the order).
func pipeConfig(c *ucli.Context, log *slog.Logger) mcastd.PipeConfig {
	return mcastd.PipeConfig{Base64: c.Bool("base64"), Linger: c.Duration("linger"), Stall: c.Duration("stall-timeout"), Log: log}
}

// runGroup is 'mcast run --views' (or --order total): one member of a
// dynamic group.
func runGroup(c *ucli.Context) error {
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	cli.ApplyRealtime(c, mb.Log)
	cfg, err := groupConfig(c, mb)
	if err != nil {
		return err
	}
	if cfg.EVS && c.Bool("exit-on-minority") {
		return cli.Exitf(cli.ExitUsage, "--exit-on-minority goes with --partitions primary: with evs every side goes on")
	}
	return mcastd.RunGroup(mb, mcastd.GroupRunConfig{Group: cfg, Order: c.String("order"), ExitOnMinority: c.Bool("exit-on-minority"),
		Pipe: pipeConfig(c, mb.Log), JSON: c.Bool(cli.FlagJSON)})
}

func bench(c *ucli.Context) error {
	cfg := mcastd.BenchConfig{Size: c.Int("size"), Count: c.Int("count"), Rate: c.Int("rate"), Linger: c.Duration("linger"), Group: isGroup(c)}
	if !cfg.Group {
		var err error
		if cfg.Order, err = mcast.ParseOrder(c.String("order")); err != nil {
			return cli.Exitf(cli.ExitUsage, "--order: %v (or total)", err)
		}
	}
	if cfg.Size < mcastd.BenchHeader || cfg.Size > mcast.MaxPayload || cfg.Count < 0 || cfg.Rate < 0 {
		return cli.Exitf(cli.ExitUsage, "--size must be %d to %d, --count and --rate not negative", mcastd.BenchHeader, mcast.MaxPayload)
	}
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	cli.ApplyRealtime(c, mb.Log)
	var gcfg group.Config
	if cfg.Group {
		if gcfg, err = groupConfig(c, mb); err != nil {
			return err
		}
	}
	stop, err := cpuprof.Start("MCAST_BENCH_CPUPROFILE", os.Getenv("MCAST_BENCH_CPUPROFILE"))
	if err != nil {
		return err
	}
	defer stop()
	return mcastd.RunBench(mb, cfg, gcfg)
}

func check(c *ucli.Context) error {
	cfg := mcastd.CheckConfig{Files: c.Args().Slice(), Views: c.Bool("views") || c.String("order") == "total"}
	var err error
	switch {
	case !cfg.Views:
		if cfg.Order, err = mcast.ParseOrder(c.String("order")); err != nil {
			return cli.Exitf(cli.ExitUsage, "--order: %v", err)
		}
	case c.String("order") == "total":
		cfg.Total = true
	case c.String("order") != "fifo":
		return cli.Exitf(cli.ExitUsage, "--views goes with --order fifo or total")
	}
	if cfg.Views {
		if cfg.EVS, err = mcastd.ParsePartitions(c.String("partitions")); err != nil {
			return err
		}
	}
	msg, err := mcastd.Check(cfg)
	if err != nil {
		return err
	}
	fmt.Println(msg)
	return nil
}
