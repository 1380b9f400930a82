package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/gossip"
	"github.com/roundtable-go/roundtable/pkg/ticket"
	"github.com/roundtable-go/roundtable/pkg/ticketsim"
)

func simCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "sim",
		Usage: "run the pool in the deterministic simulator: availability, reclaim rounds, messages",
		Description: `Plays the seed's availability experiment with the real protocol in the
deterministic simulator (no sockets, virtual time). A fraction --alpha of the
--tickets is held; every round each holder crashes with probability --pf and
a process waiting outside asks for a ticket in its place. The run prints how
many of those acquisitions got a ticket within --patience rounds, how long
reclaiming a crashed ticket took, the messages each process of the core sent
per round, and checks Theorem 4.1 (no ticket in two acting ranges) every
round. The same --seed gives the same run.

--sweep runs the whole grid instead (α 0.5, 0.8 and 0.9; p_f from 0.0001
to 0.3; --seeds seeds each; --alphas and --pfs choose others) and prints
one line per point, with the seeds' minimum, median and maximum; --plot
FILE.svg|.png|.pdf also draws the median against p_f, the seeds' spread as
bars, the seed's bound ½(1−α) and its Chernoff bound 1 − (e/4)^(2·p_f·n). Drawing needs a ticketd built with 'go build -tags plot'
(the plotting library's fonts would otherwise slow every ticketd start).

--prcast runs PrCast's traffic experiment instead: --processes members
keep partial views of --view others (default ⌈3·ln n⌉), refreshed by a
shuffle every round, and announce one notice a round for --prcast-rounds
rounds; the run prints the messages one member sent per round for
membership (shuffles) and for PrCast (pushes, digests, repairs), mean and
most, and how many notices reached every member within TTL rounds.

Exit codes: 0 done; 1 a safety violation (the message names the seed); 64
usage; 69 --plot in a ticketd built without plots.

Examples:
   ticketd sim --processes 400 --tickets 50 --alpha 0.8 --pf 0.001 --rounds 300
   ticketd sim --processes 10000 --tickets 1000 --rounds 100 --json
   ticketd sim --processes 400 --tickets 50 --seeds 3 --sweep --json
   ticketd sim --processes 400 --tickets 50 --seeds 3 --plot availability.svg
   ticketd sim --prcast --processes 10000`,
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "processes", Value: 400, Usage: "processes in all (holders and those waiting outside)"},
			&ucli.IntFlag{Name: "tickets", Value: 50, Usage: "n, the pool's size"},
			&ucli.IntFlag{Name: "k", Value: 1, Usage: "failures tolerated among 2k+1 neighbours"},
			&ucli.Float64Flag{Name: "pf", Value: 0.001, Usage: "probability that a holder crashes in a round"},
			&ucli.Float64Flag{Name: "alpha", Value: 0.8, Usage: "fraction of the tickets held (the seed's α)"},
			&ucli.IntFlag{Name: "rounds", Value: 300, Usage: "rounds to measure, after the warm-up"},
			&ucli.DurationFlag{Name: "round", Value: 100 * time.Millisecond, Usage: "the protocol's round (virtual time)"},
			&ucli.DurationFlag{Name: "margin", Usage: "added to a temporary coordinator's wait: the kill grace (ticketd run: --kill-grace plus its checks)"},
			&ucli.IntFlag{Name: "suspect", Value: 3, Usage: "rounds without an ACKUPDATE before a process excludes its successor"},
			&ucli.IntFlag{Name: "window", Value: 3, Usage: "rounds one ALIVE vouches for"},
			&ucli.IntFlag{Name: "patience", Value: 30, Usage: "rounds an acquisition may take and still count as a success"},
			&ucli.Uint64Flag{Name: "seed", Value: 1, Usage: "the simulator's seed (the first one with --plot)"},
			&ucli.IntFlag{Name: "seeds", Value: 3, Usage: "with --plot: seeds per point"},
			&ucli.StringFlag{Name: "alphas", DefaultText: "0.5,0.8,0.9", Usage: "with --sweep or --plot: the α to run, comma-separated"},
			&ucli.StringFlag{Name: "pfs", DefaultText: "the model's grid", Usage: "with --sweep or --plot: the p_f to run, comma-separated"},
			&ucli.BoolFlag{Name: "sweep", Usage: "run the α × p_f grid: one line per point"},
			&ucli.StringFlag{Name: "plot", Usage: "run the grid and draw it to this .svg, .png or .pdf file (a ticketd built with -tags plot)"},
			&ucli.StringFlag{Name: "model", Value: "independent", Usage: "independent: every holder crashes with probability --pf each protocol round; paper: --pf per round of the seed's analysis (α exclusions long), and only crashes that leave at most k failed among 2k+1 neighbours"},
			&ucli.BoolFlag{Name: "check", Usage: "check Theorem 4.1 after every step, not once a round (slow)"},
			&ucli.BoolFlag{Name: "trace", Usage: "print every event and crash of the run on stderr, with its virtual time"},
			&ucli.BoolFlag{Name: "prcast", Usage: "run PrCast's traffic experiment over partial views instead: messages per member and round"},
			&ucli.IntFlag{Name: "prcast-rounds", Value: 10, Usage: "with --prcast: rounds to measure, one notice each"},
			&ucli.IntFlag{Name: "view", DefaultText: "⌈3·ln processes⌉", Usage: "with --prcast: members in each partial view"},
			cli.JSONFlag(),
		},
		Action: simCmd,
	}
}

func simCmd(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "sim takes no arguments, got %q", c.Args().First())
	}
	if c.Bool("prcast") {
		return prcastCmd(c)
	}
	cfg := ticketsim.SimConfig{Processes: c.Int("processes"), Tickets: c.Int("tickets"), K: c.Int("k"), PF: c.Float64("pf"),
		Alpha: c.Float64("alpha"), Rounds: c.Int("rounds"), Seed: c.Uint64("seed"), Round: c.Duration("round"),
		Patience: c.Int("patience"), Check: c.Bool("check"), Margin: c.Duration("margin"),
		Suspect: c.Int("suspect"), Window: c.Int("window")}
	if c.Bool("trace") {
		cfg.Trace = os.Stderr
	}
	switch c.String("model") {
	case "independent":
	case "paper":
		cfg.Paper = true
	default:
		return cli.Exitf(cli.ExitUsage, "--model %q: want independent or paper", c.String("model"))
	}
	switch {
	case cfg.K < 1 || 2*cfg.K+1 > ticket.MaxList:
		return cli.Exitf(cli.ExitUsage, "--k must be 1 to %d", (ticket.MaxList-1)/2)
	case cfg.Round < time.Millisecond*10:
		return cli.Exitf(cli.ExitUsage, "--round must be at least 10ms")
	case cfg.Suspect < 1 || cfg.Window < 1:
		return cli.Exitf(cli.ExitUsage, "--suspect and --window must be at least 1")
	case cfg.Margin < 0:
		return cli.Exitf(cli.ExitUsage, "--margin must not be negative")
	case cfg.Patience < 1:
		return cli.Exitf(cli.ExitUsage, "--patience must be at least 1")
	case c.Int("seeds") < 1:
		return cli.Exitf(cli.ExitUsage, "--seeds must be at least 1")
	}
	if err := cfg.Validate(); err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	out := cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON))
	if file := c.String("plot"); file != "" || c.Bool("sweep") {
		if file != "" {
			if err := ticketsim.PlotFormat(file); err != nil {
				return cli.Exitf(cli.ExitUsage, "%v", err)
			}
			if !ticketsim.CanPlot {
				return cli.Exitf(cli.ExitUnavailable, "--plot: %v (or --sweep for the numbers)", ticketsim.ErrNoPlot)
			}
		}
		pfs := ticketsim.SweepPFs
		if cfg.Paper {
			pfs = ticketsim.SweepPFsPaper
		}
		alphas := ticketsim.SweepAlphas
		var err error
		if v := c.String("alphas"); v != "" {
			if alphas, err = fractions(v, "--alphas", 0, 1, false); err != nil {
				return err
			}
		}
		if v := c.String("pfs"); v != "" {
			if pfs, err = fractions(v, "--pfs", 0, 1, true); err != nil {
				return err
			}
		}
		points, err := ticketsim.Sweep(cfg, alphas, pfs, c.Int("seeds"), func(p ticketsim.SweepPoint) {
			out.Value(p.Line(), p)
		})
		if err != nil {
			return cli.Exitf(1, "%v", err)
		}
		if file == "" {
			return nil
		}
		title := fmt.Sprintf("ticketd: %d processes, %d tickets, k = %d, %d rounds, %d seeds", cfg.Processes, cfg.Tickets, cfg.K, cfg.Rounds, c.Int("seeds"))
		if err := ticketsim.Plot(points, title, file); err != nil {
			return cli.Exitf(1, "--plot: %v", err)
		}
		return nil
	}
	r, err := ticketsim.Simulate(cfg)
	if err != nil {
		return cli.Exitf(1, "%v", err)
	}
	out.Value(r.Text(), r)
	return nil
}

// fractions parses a comma-separated list of numbers in (lo, hi), or
// [lo, hi) with loClosed.
func fractions(v, flag string, lo, hi float64, loClosed bool) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x >= hi || x < lo || x == lo && !loClosed {
			return nil, cli.Exitf(cli.ExitUsage, "%s %q: want numbers from %g to below %g, comma-separated", flag, v, lo, hi)
		}
		out = append(out, x)
	}
	return out, nil
}

// prcastCmd is `ticketd sim --prcast`.
func prcastCmd(c *ucli.Context) error {
	cfg := ticketsim.PrCastConfig{Processes: c.Int("processes"), Rounds: c.Int("prcast-rounds"), View: c.Int("view"),
		Seed: c.Uint64("seed"), Round: c.Duration("round")}
	switch {
	case cfg.Processes < 2 || cfg.Processes > 1<<20:
		return cli.Exitf(cli.ExitUsage, "--processes %d: want 2 to %d", cfg.Processes, 1<<20)
	case cfg.Rounds < 1:
		return cli.Exitf(cli.ExitUsage, "--prcast-rounds must be at least 1")
	case c.IsSet("view") && (cfg.View < 1 || cfg.View > gossip.MaxView):
		return cli.Exitf(cli.ExitUsage, "--view must be 1 to %d", gossip.MaxView)
	case cfg.Round < 10*time.Millisecond:
		return cli.Exitf(cli.ExitUsage, "--round must be at least 10ms")
	}
	r, err := ticketsim.SimulatePrCast(cfg)
	if err != nil {
		return cli.Exitf(1, "%v", err)
	}
	cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON)).Value(r.Text(), r)
	return nil
}
