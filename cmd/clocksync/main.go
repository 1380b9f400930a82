// Command clocksync serves and queries time over NTPv4 (RFC 5905). See
// pkg/clocksync.
package main

import (
	"fmt"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/clockd"
	"github.com/roundtable-go/roundtable/pkg/clocksync"
	"github.com/roundtable-go/roundtable/pkg/node"
)

const tool = "clocksync"

func main() { cli.Main(newApp()) }

// newApp is the command line.
func newApp() *ucli.App {
	return &ucli.App{
		Name:  tool,
		Usage: "NTP-compatible time server and client",
		Commands: []*ucli.Command{
			{
				Name:  "serve",
				Usage: "answer NTPv4 client requests from this host's clock",
				Description: `Answers NTP mode-3 requests with mode-4 replies that real clients accept.
With --stratum N the server declares itself synchronised at stratum N
(reference ID LOCL); without it, it answers with leap indicator 3 (alarm) so
clients refuse it, as unsynchronised servers do. With --upstream it
disciplines its own clock from that server (slewing, never stepping back)
and serves at the upstream's stratum + 1 once it has a good sample.
--skew and --drift-ppm give the server a deliberately wrong virtual clock.
The system clock is never changed unless --apply is given: then (as root,
with --upstream) the kernel slews the system clock with adjtimex at up to
500 ppm, steps it only forward (past --makestep), and corrects its
frequency; a slew in progress ends by itself if the server dies.
With --peer two servers of equal role poll each other, and one adjusts to
the other only while the other's stratum is lower (NTP's symmetric mode as
Tanenbaum ch. 6 states it); the other is left unchanged.
With --socket PATH, 'clocksync now --socket PATH' shows the disciplined time.

Examples:
   clocksync serve --bind 127.0.0.1:12300 --stratum 1
   clocksync serve --bind 127.0.0.1:12301 --upstream 127.0.0.1:12300 --skew 250ms --drift-ppm 200
   clocksync serve --bind '{{ GetPrivateIP }}:123' --stratum 2
   sudo clocksync serve --bind 127.0.0.1:12302 --upstream ntp.example:123 --apply --socket /run/clocksync.sock`,
				Flags: cli.WithEnv(tool, append([]ucli.Flag{
					cli.BindFlag("127.0.0.1:12300", ""),
					&ucli.IntFlag{Name: "stratum", Usage: "declare this clock synchronised at this stratum (1-15)"},
					&ucli.StringFlag{Name: "upstream", Usage: "discipline this server's clock from HOST:PORT and serve at its stratum + 1"},
					&ucli.StringFlag{Name: "peer", Usage: "peer symmetrically with the server at HOST:PORT: follow it only while its stratum is lower than this server's, and serve at its stratum + 1"},
					&ucli.DurationFlag{Name: "poll", Value: time.Second, Usage: "with --upstream or --peer: query it this often"},
					maxSkewFlag(),
					skewFlag(), driftFlag(),
					&ucli.Float64Flag{Name: "max-slew", Value: 83333, Usage: "fastest correction, in ppm; the clock is slewed, never stepped back"},
					&ucli.DurationFlag{Name: "makestep", Value: time.Second, Usage: "when behind by more than this, step forward at once"},
					&ucli.BoolFlag{Name: "apply", Usage: "slew the real system clock (adjtimex; needs root) instead of a virtual one; off by default"},
					socketFlag(),
					cli.ReadyFileFlag(),
					cli.MetricsFlag(),
				}, cli.LogFlags()...)),
				Action: serve,
			},
			{
				Name:  "berkeley",
				Usage: "run one member of a Berkeley time daemon group",
				Description: `The master polls every member (itself included), corrects each reading for
half the round trip, averages those within --max-deviation of the median,
and tells each member its adjustment; members slew their (virtual) clock,
never backwards. Without --master the master is elected (bully) and
re-elected when it fails. Prints 'adjust <seconds> master <id>' per round.
The system clock is never changed: --skew and --drift-ppm make a member's
clock deliberately wrong, and 'clocksync now' shows where each one is.

Examples:
   clocksync berkeley --id 1 --peers @peers.txt --skew 200ms --drift-ppm 50
   clocksync berkeley --id 2 --peers @peers.txt --master 1 --interval 500ms`,
				Flags: cli.WithEnv(tool, append(cli.NodeFlags(),
					&ucli.StringFlag{Name: "master", DefaultText: "elected", Usage: "the fixed time daemon"},
					&ucli.DurationFlag{Name: "interval", Value: time.Second, Usage: "polling interval"},
					&ucli.DurationFlag{Name: "max-deviation", Value: 100 * time.Millisecond, Usage: "leave out readings this far from the median"},
					skewFlag(), driftFlag(),
				)),
				Action: berkeley,
			},
			coordsCommand,
			waitCommand,
			{
				Name:  "now",
				Usage: "print a running node's disciplined time (--socket) or each Berkeley member's offset (--peers)",
				Description: `With --socket PATH, asks the 'clocksync serve --socket PATH' on this host
for its time: the disciplined time, how far it is from the system clock,
the frequency correction and the part of the last offset still being
slewed. With --peers, asks every Berkeley member where its clock is
relative to this host's, and prints the spread.

Examples:
   clocksync now --socket /run/clocksync.sock
   clocksync now --peers @peers.txt --json`,
				Flags:  cli.WithEnv(tool, append(append(cli.ClientFlags(), socketFlag()), cli.QueryFlags()...)),
				Action: nowCmd,
			},
			{
				Name:      "query",
				Usage:     "query an NTP server: T1-T4, offset θ and delay δ per sample, the minimum-delay pick",
				ArgsUsage: "HOST:PORT",
				Description: `Sends --samples requests and prints each exchange's offset θ, its
round-trip delay (RFC 5905: (T4 − T1) − (T3 − T2)) and its one-way delay δ
(Tanenbaum ch. 6: half the round trip), then the sample with the smallest delay (the 8-sample minimum-delay
filter) in chrony-like fields. Exit 69 when the server does not answer,
75 when it answers unsynchronised (leap 3).

Examples:
   clocksync query 127.0.0.1:12300
   clocksync query --samples 4 --json pool.example:123`,
				Flags: cli.WithEnv(tool, []ucli.Flag{
					&ucli.IntFlag{Name: "samples", Value: clocksync.FilterSize, Usage: "requests to send (1-64)"},
					&ucli.DurationFlag{Name: "timeout", Value: time.Second, Usage: "wait this long for each answer"},
					&ucli.DurationFlag{Name: "pause", Value: 10 * time.Millisecond, Usage: "pause between requests"},
					cli.JSONFlag(),
				}),
				Action: query,
			},
		},
	}
}

func skewFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: "skew", Usage: "start this node's virtual clock off by this much, for demonstrations"}
}

func driftFlag() ucli.Flag {
	return &ucli.Float64Flag{Name: "drift-ppm", Usage: "make this node's virtual clock run fast (+) or slow (-) by this many ppm"}
}

// socketFlag is the serve node's control socket: where serve answers and
// now asks.
func socketFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "socket", Usage: "a serve node's control socket (Unix, mode 0600), for 'clocksync now --socket PATH'"}
}

func serve(c *ucli.Context) error {
	log, err := cli.Logger(c, tool)
	if err != nil {
		return err
	}
	bind, err := cli.ResolveBind(c.String("bind"))
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	poll, err := servePoll(c, log)
	if err != nil {
		return err
	}
	mx, err := cli.ListenMetrics(c, tool, 0, log)
	if err != nil {
		return err
	}
	return clockd.Serve(clockd.ServeConfig{Metrics: mx, Bind: bind, Upstream: c.String("upstream"), Peer: c.String("peer"), Poll: poll,
		Stratum: c.Int("stratum"), Skew: c.Duration("skew"), DriftPPM: c.Float64("drift-ppm"),
		MaxSlew: c.Float64("max-slew"), MakeStep: c.Duration("makestep"), Apply: c.Bool("apply"),
		Socket: c.String("socket"), ReadyFile: c.String(cli.FlagReadyFile), Log: log})
}

func query(c *ucli.Context) error {
	if c.NArg() != 1 {
		return cli.Exitf(cli.ExitUsage, "query takes one HOST:PORT")
	}
	return clockd.Query(clockd.QueryConfig{Target: c.Args().First(), Samples: c.Int("samples"),
		Timeout: c.Duration("timeout"), Pause: c.Duration("pause")}, cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON)))
}

func berkeley(c *ucli.Context) error {
	var master node.ID
	if m := c.String("master"); m != "" {
		var err error
		if master, err = node.ParseID(m); err != nil {
			return cli.Exitf(cli.ExitUsage, "--master: %v", err)
		}
	}
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	return clockd.Berkeley(mb, clocksync.BerkeleyConfig{Master: master,
		Interval: c.Duration("interval"), MaxDeviation: c.Duration("max-deviation"),
		Skew: c.Duration("skew"), DriftPPM: c.Float64("drift-ppm"), Epoch: time.Now()})
}

func nowCmd(c *ucli.Context) error {
	if path := c.String("socket"); path != "" {
		return clockd.NowSocket(path, c.Duration("wait"), cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON)))
	}
	if c.String(cli.FlagPeers) == "" {
		return cli.Exitf(cli.ExitUsage, "now needs --socket PATH (a serve node on this host) or --peers (Berkeley members)")
	}
	cm, replies, err := cli.QueryStatus(c, tool)
	if err != nil {
		return err
	}
	if len(replies) == 0 {
		return cli.Exitf(cli.ExitUnavailable, "no member answered within %v", c.Duration("wait"))
	}
	var lo, hi time.Duration
	first := true
	for _, id := range cli.IDs(cm.Peers) {
		r, ok := replies[id]
		if !ok {
			cm.Out.Line(fmt.Sprintf("member %d silent", id))
			continue
		}
		master, off := berkeleyStatus(r)
		if first || off < lo {
			lo = off
		}
		if first || off > hi {
			hi = off
		}
		first = false
		if c.Bool(cli.FlagJSON) {
			cm.Out.JSON(map[string]any{"event": "member", "id": id, "master": master, "offset_s": off.Seconds()})
		} else {
			cm.Out.Line(fmt.Sprintf("member %d master %d offset %+.6fs", id, master, off.Seconds()))
		}
	}
	if c.Bool(cli.FlagJSON) {
		cm.Out.JSON(map[string]any{"event": "spread", "spread_s": (hi - lo).Seconds()})
	} else {
		cm.Out.Line(fmt.Sprintf("spread %.6fs", (hi - lo).Seconds()))
	}
	return nil
}
