// Command mcast is group communication for scripts: lines on stdin are
// multicast to the group, and every member prints what it delivers on
// stdout, in the order the chosen guarantee promises. See pkg/mcast.
package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/gossip"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/mcastd"
	"github.com/roundtable-go/roundtable/pkg/node"
)

const tool = "mcast"

var runFlags = cli.WithEnv(tool, append(append(cli.NodeFlags(), groupFlags...),
	orderFlag,
	lingerFlag,
	&ucli.BoolFlag{Name: "base64", Usage: "input lines are base64 and payloads are printed in base64 (binary-safe)"},
	&ucli.DurationFlag{Name: "period", DefaultText: "50ms; 20ms with --views", Usage: "how often members exchange digests (what each has received), which drives repair; with --views the heartbeat"},
	&ucli.DurationFlag{Name: "suspect", DefaultText: "20 × --period (1s); with --views 8 × --period (160ms)", Usage: "a member silent this long no longer holds up 'delivered by all' at end of input; with --views it is taken out of the view"},
	&ucli.DurationFlag{Name: "stall-timeout", Value: 30 * time.Second, Usage: "when a write to stdout has been blocked this long, give up: say so on stderr and exit 76, leaving the group (0: wait for ever); until then the group slows to this member's reader"},
	&ucli.BoolFlag{Name: "tree", Usage: "with --order gossip: spread along a fixed tree of the members, batched per --period, instead of to random members (fewer messages; see docs/mcast.md)"},
	&ucli.BoolFlag{Name: "exit-on-minority", Usage: "with --views: exit 69 when cut off with a minority of the view, instead of waiting for the majority"},
))

// orderFlag is shared by run and bench: MCAST_ORDER means one thing.
var orderFlag = &ucli.StringFlag{Name: "order", Value: "fifo", Usage: "unordered, fifo, causal, gossip (run only) or total (one order for every member, in a dynamic group; see --total)"}

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
	var group mcast.GroupConfig
	if cfg.Group {
		if group, err = groupConfig(c, mb); err != nil {
			return err
		}
	}
	stop, err := benchProfile(os.Getenv("MCAST_BENCH_CPUPROFILE"))
	if err != nil {
		return err
	}
	defer stop()
	return mcastd.RunBench(mb, cfg, group)
}

// benchProfile writes a CPU profile of the bench to file when it is set
// (MCAST_BENCH_CPUPROFILE, for 'go tool pprof'; not a flag: it is for
// whoever works on mcast's speed, not for users).
func benchProfile(file string) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, cli.Exitf(cli.ExitUsage, "MCAST_BENCH_CPUPROFILE: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, cli.Exitf(cli.ExitUsage, "MCAST_BENCH_CPUPROFILE: %v", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func check(c *ucli.Context) error {
	if c.Bool("views") || c.String("order") == "total" {
		return checkViews(c)
	}
	order, err := mcast.ParseOrder(c.String("order"))
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--order: %v", err)
	}
	if c.Args().Len() == 0 {
		return cli.Exitf(cli.ExitUsage, "check needs the --json logs of the members (mcast check LOG...)")
	}
	logs := map[node.ID][]mcast.Record{}
	files := map[node.ID]string{}
	crashed := map[node.ID]bool{}
	deliveries := 0
	for _, file := range c.Args().Slice() {
		id, recs, clean, err := mcastd.ReadLog(file)
		if err != nil {
			return cli.Exitf(cli.ExitUsage, "%s: %v", file, err)
		}
		if _, dup := logs[id]; dup {
			return cli.Exitf(cli.ExitUsage, "%s: a second log of member %d", file, id)
		}
		logs[id] = recs
		files[id] = file
		crashed[id] = !clean
		deliveries += len(recs)
	}
	if err := mcast.Check(order, logs, crashed); err != nil {
		return checkFailed(err, files)
	}
	var down []string
	for id, c := range crashed {
		if c {
			down = append(down, id.String())
		}
	}
	slices.Sort(down)
	msg := fmt.Sprintf("ok: %d members, %d sends and deliveries, %s order holds", len(logs), deliveries, order)
	if len(down) > 0 {
		msg += fmt.Sprintf("; members without a clean exit (agreement not required of them): %v", down)
	}
	fmt.Println(msg)
	return nil
}

// checkViews is 'mcast check --views': Nita-Rotaru's properties of virtual
// synchrony over the logs of a dynamic group.
func checkViews(c *ucli.Context) error {
	total := false
	switch c.String("order") {
	case "total":
		total = true
	case "fifo":
	default:
		return cli.Exitf(cli.ExitUsage, "--views goes with --order fifo or total")
	}
	if c.Args().Len() == 0 {
		return cli.Exitf(cli.ExitUsage, "check needs the --json logs of the members (mcast check --views LOG...)")
	}
	logs := map[mcast.Member][]mcast.VRecord{}
	final := map[mcast.Member]bool{}
	files := map[node.ID]string{}
	lines, views, safe, merged := 0, map[uint64]bool{}, false, false
	for _, file := range c.Args().Slice() {
		vl, err := mcastd.ReadViewLog(file)
		if err != nil {
			return cli.Exitf(cli.ExitUsage, "%s: %v", file, err)
		}
		if _, dup := files[vl.ID]; dup {
			return cli.Exitf(cli.ExitUsage, "%s: a second log of member %d", file, vl.ID)
		}
		files[vl.ID] = file
		for m, recs := range vl.Lives {
			logs[m] = recs
			lines += len(recs)
			for _, r := range recs {
				switch r.Kind {
				case mcast.VView:
					views[r.View] = true
				case mcast.VTransitional:
					safe = true
				case mcast.VMerge:
					merged = true
				}
			}
		}
		if vl.Final != nil {
			final[*vl.Final] = true
		}
	}
	evs := false
	switch p := c.String("partitions"); p {
	case "primary":
	case "evs":
		evs = true
	default:
		return cli.Exitf(cli.ExitUsage, "--partitions: %q is not one of: primary, evs", p)
	}
	if merged && !evs {
		return cli.Exitf(cli.ExitUsage, "the logs show merges of components: check them with --partitions evs")
	}
	if err := mcast.CheckViewsEVS(total, evs, logs, final); err != nil {
		return checkFailed(err, files)
	}
	what := "virtual synchrony"
	if total {
		what += ", total order"
	}
	if safe {
		what += ", safe delivery"
	}
	if evs {
		what += ", extended virtual synchrony"
	}
	what += " hold"
	fmt.Printf("ok: %d members (%d incarnations), %d views, %d records; %s\n", len(files), len(logs), len(views), lines, what)
	return nil
}

// checkFailed reports a failed check on stderr, with a violation's log
// lines as FILE:LINE, and exits 1.
func checkFailed(err error, files map[node.ID]string) error {
	msg := err.Error()
	if v, ok := err.(*mcast.Violation); ok {
		msg = v.Detail()
		for id, f := range files {
			msg = strings.ReplaceAll(msg, fmt.Sprintf("member %d line ", id), f+":")
		}
	}
	fmt.Fprintf(os.Stderr, "mcast: check failed: %s\n", msg)
	return &cli.ExitError{Code: 1}
}
