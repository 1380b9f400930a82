// Command consensus runs one process of FloodSet (crash faults) or EIG
// (Byzantine faults) over synchronous rounds. See pkg/consensus.
package main

import (
	"slices"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/consensus"
	"github.com/roundtable-go/roundtable/pkg/consensusd"
	"github.com/roundtable-go/roundtable/pkg/node"
)

const tool = "consensus"

var defaults = consensus.DefaultConfig()

var runFlags = cli.WithEnv(tool, append(cli.NodeFlags(),
	&ucli.StringFlag{Name: "algo", Value: defaults.Algo.String(), Usage: "floodset (crash faults), eig (Byzantine faults, n > 3f) or signed (Byzantine faults with signed messages, n > 2f)"},
	&ucli.BoolFlag{Name: "signed", Usage: "the same as --algo signed: Lamport–Shostak–Pease's signed messages (needs --signing-key, --public-keys)"},
	&ucli.StringFlag{Name: "signing-key", Usage: "signed: this process's private key (written by 'consensus keygen', mode 0600)"},
	&ucli.StringFlag{Name: "public-keys", Usage: "signed: a file of ID=public-key lines, one per process ('consensus keygen' prints them)"},
	&ucli.StringFlag{Name: "session", DefaultText: "--start-at's value", Usage: "signed: a name for this run that every signature is bound to (the same on every process; a new one for every run with the same keys)"},
	&ucli.IntFlag{Name: "f", Value: 1, Usage: "faults to tolerate; f+1 rounds are run (EIG: needs n > 3f; signed: n > 2f)"},
	&ucli.StringFlag{Name: "value", Usage: "this process's input value"},
	&ucli.DurationFlag{Name: "round", Value: defaults.Round, Usage: "round length: the deadline for every message of a round (> max delivery + handling time)"},
	&ucli.StringFlag{Name: "start-at", DefaultText: "the start barrier", Usage: "when round 1 begins, on a clock every process shares: RFC 3339, Unix seconds, or +duration (instead of the start barrier)"},
	&ucli.DurationFlag{Name: "wait", Value: defaults.Wait, Usage: "start barrier: wait this long for every peer; after it, n-f processes (and a majority) that have all waited start without the rest"},
	&ucli.DurationFlag{Name: "start-timeout", Value: defaults.Timeout, Usage: "start barrier: give up (exit 69) unless n-f processes, and a majority, have come up by then"},
	&ucli.StringFlag{Name: "rule", Value: "min", Usage: "FloodSet decision rule: min or max (integers compare numerically)"},
	&ucli.StringFlag{Name: "default", Value: defaults.Default, Usage: "EIG: the value of silence and of a missing majority"},
	&ucli.IntFlag{Name: "crash-round", Usage: "fault injection: crash during this round ..."},
	&ucli.IntFlag{Name: "crash-after", Usage: "... after sending to this many peers (successors in ID order)"},
	&ucli.StringFlag{Name: "byzantine", Usage: "fault injection (EIG, signed): silent, random, two-faced, liar or forger (signed only)"},
	&ucli.StringFlag{Name: "lie", Value: defaults.Lie, Usage: "the value a Byzantine process lies with"},
	&ucli.BoolFlag{Name: "unsafe", Usage: "allow EIG with n ≤ 3f (signed: n ≤ 2f), to demonstrate that it then fails"},
))

func main() { cli.Main(newApp()) }

// newApp is the command line.
func newApp() *ucli.App {
	return &ucli.App{
		Name:  tool,
		Usage: "agree on one value: FloodSet (f crash faults), EIG (f Byzantine faults, n > 3f) or signed messages (n > 2f)",
		Commands: []*ucli.Command{{
			Name:  "run",
			Usage: "take part in one consensus instance; print 'decide <value> round <r>'",
			Description: `Runs one process for f+1 synchronous rounds and prints its decision as
'decide <value> round <r>' (with --json also messages, bytes, rounds and, for
EIG, the tree size), then exits 0. A process made to crash prints
'crash round <r>'; a Byzantine one prints 'byzantine <strategy> round <r>'.

Every process must use the same --peers, --f, --algo and --round. Round 1
starts at --start-at if given (a clock every process shares). Otherwise the
start barrier starts it: every process announces itself until it has heard
from every peer; after --wait, n-f processes (and a majority) that have all
waited start without the rest; a peer's round message starts it at once.

A process that cannot decide safely prints 'undecided round <r> missed
<ids>' and exits 69: when it missed some round's messages from more than f
peers, heard from no majority in round 1, or its start barrier found too
few processes within --start-timeout. It never decides in silence without
the rounds it needs.

Examples:
   consensus run --algo floodset --id 1 --peers @peers.txt --f 2 --value 17
   consensus run --algo eig --id 4 --peers @peers.txt --f 1 --value attack --default retreat
   consensus run --algo eig --id 3 --peers @peers.txt --f 1 --value attack --byzantine two-faced --lie retreat
   consensus run --algo floodset --id 2 --peers @peers.txt --f 2 --value 3 --crash-round 2 --crash-after 1
   consensus keygen --id 1 --out 1.key >> pubkeys.txt    # once per process
   consensus run --signed --signing-key 1.key --public-keys pubkeys.txt --id 1 --peers @peers.txt --f 2 --value attack --start-at +2s

A process told to crash (--crash-round) sends its round's message to the
given number of successors, prints 'crash round <r>' and kills itself with
SIGKILL (exit status 137), like a process that dies mid-broadcast.

With --signed every value travels with a chain of Ed25519 signatures, from
its origin's on; a relayed value whose chain does not verify is dropped and
counted ('forged' in --json). The decision is the majority of the agreed
vector of every process's value ('vector' in --json); n > 2f suffices.`,
			Flags:  runFlags,
			Action: run,
		}, {
			Name:  "keygen",
			Usage: "make an Ed25519 key pair for --signed; print 'ID=public-key'",
			Description: `Writes a new private key to --out (mode 0600; an existing file is never
overwritten) and prints the public key as 'ID=base64', the line format of
--public-keys: collect every process's line into one file.

Examples:
   for i in 1 2 3 4 5; do consensus keygen --id $i --out $i.key; done > pubkeys.txt`,
			Flags:  keygenFlags,
			Action: keygen,
		}, terminateCommand},
	}
}

func run(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "unexpected argument %q", c.Args().First())
	}
	cfg, err := config(c)
	if err != nil {
		return err
	}
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	return consensusd.Run(mb, cfg)
}

// config builds the protocol configuration from the flags (before the
// socket is opened, so a bad flag costs nothing).
func config(c *ucli.Context) (consensus.Config, error) {
	cfg := consensus.Config{F: c.Int("f"), Value: c.String("value"), Round: c.Duration("round"),
		Default: c.String("default"), Lie: c.String("lie"), Unsafe: c.Bool("unsafe"),
		CrashRound: c.Int("crash-round"), CrashAfter: c.Int("crash-after")}
	var err error
	if cfg.Algo, err = consensus.ParseAlgo(c.String("algo")); err != nil {
		return cfg, cli.Exitf(cli.ExitUsage, "--algo: %v", err)
	}
	if c.Bool("signed") {
		if c.IsSet("algo") && cfg.Algo != consensus.Signed {
			return cfg, cli.Exitf(cli.ExitUsage, "--signed and --algo %s contradict each other", cfg.Algo)
		}
		cfg.Algo = consensus.Signed
	}
	if cfg.Algo == consensus.Signed {
		if !c.IsSet("signing-key") || !c.IsSet("public-keys") {
			return cfg, cli.Exitf(cli.ExitUsage, "--signed needs --signing-key and --public-keys (make them with 'consensus keygen')")
		}
		if cfg.Key, err = readSigningKey(c.String("signing-key")); err != nil {
			return cfg, cli.Exitf(cli.ExitUsage, "--signing-key: %v", err)
		}
		if cfg.Keys, err = readPublicKeys(c.String("public-keys")); err != nil {
			return cfg, cli.Exitf(cli.ExitUsage, "--public-keys: %v", err)
		}
		cfg.Session = c.String("session")
		if !c.IsSet("session") {
			cfg.Session = c.String("start-at")
		}
	}
	if !c.IsSet("value") {
		return cfg, cli.Exitf(cli.ExitUsage, "--value is required")
	}
	switch c.String("rule") {
	case "min":
		cfg.Rule = consensus.Min
	case "max":
		cfg.Rule = consensus.Max
	default:
		return cfg, cli.Exitf(cli.ExitUsage, "--rule must be min or max")
	}
	if b := c.String("byzantine"); b != "" {
		if cfg.Byzantine, err = consensus.ParseStrategy(b); err != nil {
			return cfg, cli.Exitf(cli.ExitUsage, "--byzantine: %v", err)
		}
	}
	if cfg.Round <= 0 {
		return cfg, cli.Exitf(cli.ExitUsage, "--round must be positive")
	}
	now := time.Now()
	if s := c.String("start-at"); s != "" {
		if cfg.Start, err = cli.ParseTime(s, now); err != nil {
			return cfg, cli.Exitf(cli.ExitUsage, "--start-at: %v", err)
		}
	}
	cfg.Wait, cfg.Timeout = c.Duration("wait"), c.Duration("start-timeout")
	if cfg.Wait <= 0 || cfg.Timeout <= 0 {
		return cfg, cli.Exitf(cli.ExitUsage, "--wait and --start-timeout must be positive")
	}
	// The peer list is validated by Join; check f against it early too.
	peers, _, err := cli.Peers(c)
	if err != nil {
		return cfg, err
	}
	cfg.Peers = cli.IDs(peers)
	cfg.ID = cfg.Peers[0]
	if id, err := node.ParseID(c.String(cli.FlagID)); err == nil && slices.Contains(cfg.Peers, id) {
		cfg.ID = id // Join reports an --id not in --peers
	}
	check := cfg
	if err := check.Validate(); err != nil {
		return cfg, cli.Exitf(cli.ExitUsage, "%v", err)
	}
	return cfg, nil
}
