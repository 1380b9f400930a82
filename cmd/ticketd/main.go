// Command ticketd is a decentralised pool of n numbered tickets for
// scripts: a daemon per host ('ticketd serve') and clients ('ticketd run',
// 'hold', 'status') that talk to it over a Unix socket. See pkg/ticketd
// and pkg/ticket.
package main

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/claim"
	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/cpuprof"
	"github.com/roundtable-go/roundtable/pkg/ticket"
	"github.com/roundtable-go/roundtable/pkg/ticketd"
)

const tool = ticketd.Tool

func socketFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "socket", Value: cli.DefaultSocket(tool), DefaultText: "$XDG_RUNTIME_DIR/ticketd.sock, else $TMPDIR/roundtable-UID/ticketd.sock",
		Usage: "the daemon's control socket"}
}

func serveFlags() []ucli.Flag {
	node := cli.DropFlags(cli.NodeFlags(), cli.FlagPeers, cli.FlagTransport, cli.FlagAdvertise, cli.FlagResolveEvery, cli.FlagDNSServer)
	return cli.WithEnv(tool, append(node,
		&ucli.StringFlag{Name: "join", Usage: "members of the pool to ask, comma-separated: host:port, dns:NAME:PORT (every A/AAAA record of NAME) or srv:NAME (every SRV record), asked until one answers; none: found a new pool"},
		cli.DNSServerFlag(),
		&ucli.IntFlag{Name: "tickets", Usage: "n, the pool's size: required to found a pool; with --join, checked against the pool's"},
		&ucli.IntFlag{Name: "k", Value: 1, Usage: "a member stays in the core while k+1 of its 2k+1 closest predecessors vouch for it; survives k failures among 2k+1 neighbours"},
		&ucli.DurationFlag{Name: "round", Value: 30 * time.Millisecond, Usage: "the period of ALIVE and UPDATE messages; failures are detected in about 3 rounds; a crashed member's tickets are reclaimed after about 20 rounds plus --max-kill-grace"},
		&ucli.DurationFlag{Name: "max-kill-grace", Value: 100 * time.Millisecond, Usage: "the longest 'ticketd run --kill-grace' a client may use: how long a command whose ticket is lost gets between SIGTERM and SIGKILL; the members wait this much longer before handing a ticket out again"},
		&ucli.DurationFlag{Name: "join-timeout", Value: 10 * time.Second, Usage: "give up (exit 69) if no member answers at --join within this"},
		&ucli.StringFlag{Name: "state-file", DefaultText: "$XDG_RUNTIME_DIR/ticketd-CLUSTER-ID.epoch, else $TMPDIR/roundtable-UID/ticketd-CLUSTER-ID.epoch",
			Usage: "keep the highest fencing epoch here, so that a restarted member or a pool founded again starts above it; '' keeps none (such a member never founds a pool)"},
		socketFlag(),
		cli.RealtimeFlag(),
	))
}

func waitFlags(extra ...ucli.Flag) []ucli.Flag {
	return cli.WithEnv(tool, append(append([]ucli.Flag{socketFlag()}, claim.Flags(claim.Help{
		NonBlock: "fail (exit 75) unless a ticket comes within four rounds; exit 69 if no answer comes within 1s (the daemon is stopped or starved, or --round is above 250ms)",
		Progress: "what the member knows of the pool",
	})...), extra...))
}

func main() { cli.Main(newApp()) }

func newApp() *ucli.App {
	return &ucli.App{
		Name:  tool,
		Usage: "a pool of n numbered tickets with no server: fencing epochs, sub-second reclaim, no orphaned children",
		Commands: []*ucli.Command{
			{
				Name:  "serve",
				Usage: "run this host's member of a pool",
				Description: `Runs one member of a ticket pool and serves local clients on --socket (a
Unix socket, mode 0600). The first member founds the pool (--tickets N, no
--join); the others join through any member's address and learn N. A member
takes a ticket from the pool when a local client asks for one and lends it
to one local command after another; it gives it back when another member
waits for one.

A member that stops leaves the pool's address books; one that joins is in
them only once it has accepted the pool (its --tickets agrees, its --id is
nobody else's). 'ticketd forget ID' strikes off a member that will not
come back.

--join also takes names, as --peers does in the other tools: dns:NAME:PORT
(every A and AAAA record of NAME, at PORT) and srv:NAME (every SRV record,
its target at its port), looked up once at start; the new member asks every
address they give (but its own) until one answers.

SIGHUP re-reads --key-file (see docs/design.md, "Changing the key").

Exit codes: 0 after SIGINT or SIGTERM (the ticket is given back
first; a second signal stops at once); 64 usage (a bad flag, --tickets
that disagrees with the pool's, or an --id another member holds); 69
cannot bind, a --join name gave no address, or no member answered at
--join; 75 another ticketd already
serves --socket; 76 another member forgot this one (start it again with
--join).

Examples:
   ticketd serve --id 1 --bind 10.0.0.1:7300 --tickets 8 --key-file pool.key
   ticketd serve --id 2 --bind 10.0.0.2:7300 --join 10.0.0.1:7300 --key-file pool.key
   ticketd serve --id 3 --bind 127.0.0.1:7302 --join 127.0.0.1:7300,127.0.0.1:7301 --socket /tmp/t3.sock
   ticketd serve --id 4 --bind 10.0.0.4:7300 --join srv:_ticketd._udp.example.com --key-file pool.key`,
				Flags:  serveFlags(),
				Action: serve,
			},
			{
				Name:      "run",
				Usage:     "take a ticket, run a command while holding it, give it back",
				ArgsUsage: "-- command args...",
				Description: `Takes a ticket through the local member, runs the command (directly; with
--shell through /bin/sh -c) with TICKETD_TICKET (0..n-1), TICKETD_TICKETS (n)
and TICKETD_EPOCH set, and gives the ticket back when it exits.
TICKETD_EPOCH is a fencing number that only grows for the ticket, also
across crashes: give it to what the command writes to, and refuse lower ones.

The command runs under a watchdog: if the member stops renewing the ticket
(it died, was stopped, or lost its place in the pool) the command gets
SIGTERM, then SIGKILL after the kill grace, before any other member may
hand the ticket out again. The watchdog kills it --kill-slack before that
point, or earlier on a host that makes its timers fire late (twice their
worst lateness over the last 10s); a ticket with less time left than the
slack starts nothing.

A wait that lasts a second says on stderr what it waits for (the tickets
the member holds and has lent, who else waits, or that the daemon does not
answer), then again every 15s; --quiet silences it. --nonblock answers
within about a second even when the daemon is stopped; --timeout D ends
within D plus 10% and names the cause.

Exit codes: the command's own code, or 128+signal; 75 busy or timed out
(--conflict-exit-code); 76 the ticket was lost while the command ran; 69 no
daemon, a daemon that does not answer (stopped, starved), or the member is
stopping. Signals reach the command and its whole process group; when the
command ends, or the ticket is lost, whatever it left running in its group
(background jobs) is killed before the ticket is given back. If ticketd run
is killed, so is the command, and the ticket is given back.

Examples:
   ticketd run -- ./worker.sh        # worker.sh reads $TICKETD_TICKET of $TICKETD_TICKETS
   ticketd run --nonblock -- ./backup || echo "all slots busy"
   ticketd run --timeout 30s --shell -- 'process-shard $TICKETD_TICKET'
   ticketd run --quiet --timeout 10m -- ./nightly.sh 2>>nightly.log`,
				// No --json: the command owns stdout.
				Flags: waitFlags(
					&ucli.DurationFlag{Name: "kill-grace", Usage: "after the ticket is lost: SIGTERM, then SIGKILL after this long (at most, and by default, the member's --max-kill-grace)"},
					cli.KillSlackFlag(),
					cli.RealtimeClientFlag(tool),
					&ucli.BoolFlag{Name: "shell", Usage: "run the command through /bin/sh -c"}),
				Action: runCmd,
			},
			{
				Name:  "hold",
				Usage: "take a ticket, print it, hold it until stdin closes or a signal",
				Description: `Prints 'taken T epoch E of N' and holds the ticket until stdin closes or a
signal arrives, for coprocesses in shell scripts:

   coproc T { ticketd hold; }
   read -r _ ticket _ epoch _ n <&"${T[0]}"   # taken 2 epoch 9 of 4
   ... work on slot $ticket, fenced by $epoch ...
   exec {T[1]}>&-                              # give it back

Nothing is stopped for you: if the ticket is lost, 'lost T epoch E (reason)'
is printed and hold exits 76.`,
				Flags:  waitFlags(cli.JSONFlag()),
				Action: holdCmd,
			},
			{
				Name:  "status",
				Usage: "the pool as this member sees it: its ticket, range, successor, predecessors, known members",
				Flags: cli.WithEnv(tool, []ucli.Flag{socketFlag(), cli.JSONFlag()}),
				Action: func(c *ucli.Context) error {
					return ticketd.Status(c.String("socket"), cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON)))
				},
			},
			{
				Name:  "watch",
				Usage: "print who takes, releases, loses and reclaims which ticket, pool-wide, one line each",
				Description: `Prints the pool's notices as the local member hears them through PrCast,
the members' gossip (with high probability, in no set order; never used for
safety):

   taken T by M epoch E      member M lent ticket T to a command, epoch E
   released T by M epoch E   that command is done
   lost T by M epoch E       member M lost the ticket; its command was stopped
   excluded T..U by M        member M excluded failed processes, reclaimed T..U

Runs until a signal (exit 0) or the daemon goes away (69). With
--ready-file, the file appears once the member has registered the watcher:
a script that waits for it misses no notice the member hears afterwards.

Examples:
   ticketd watch
   ticketd watch --json | jq -c 'select(.event == "lost")'
   ticketd watch --ready-file w.ready > notices & until [ -e w.ready ]; do sleep 0.05; done`,
				// --ready-file stays out of the environment: TICKETD_READY_FILE is serve's.
				Flags: append(cli.WithEnv(tool, []ucli.Flag{socketFlag(), cli.JSONFlag()}), cli.WatchReadyFlag()),
				Action: func(c *ucli.Context) error {
					if c.Args().Len() > 0 {
						return cli.Exitf(cli.ExitUsage, "watch takes no arguments, got %q", c.Args().First())
					}
					return ticketd.Watch(c.String("socket"), c.String(cli.FlagReadyFile), cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON)))
				},
			},
			{
				Name:      "forget",
				Usage:     "strike a member that will not come back off the pool's address books, for good",
				ArgsUsage: "ID",
				Description: `Asks the local member to remove member ID (a host that is gone for good)
from its address book; the other members learn it from its book within a
second or two. A member that stops cleanly (SIGTERM, SIGINT) leaves
the books by itself; forget is for one that was killed, or whose host
died. A forgotten member that is still running stops (exit 76); one that
comes back must join again (serve --join).

Prints 'forgotten ID at ADDR'. Exit codes: 0 done; 64 a bad ID (not 1 to
16777215, the member's own, or not in its book); 69 no daemon, or it did
not answer.

Examples:
   ticketd forget 3
   ticketd forget --socket /tmp/t1.sock 3`,
				Flags: cli.WithEnv(tool, []ucli.Flag{socketFlag(), cli.JSONFlag()}),
				Action: func(c *ucli.Context) error {
					if c.Args().Len() != 1 {
						return cli.Exitf(cli.ExitUsage, "forget takes one member ID, got %d arguments", c.Args().Len())
					}
					id, err := strconv.ParseUint(c.Args().First(), 10, 32)
					if err != nil || id == 0 || id > ticketd.MaxMemberID {
						return cli.Exitf(cli.ExitUsage, "forget: %q is not a member ID (1 to %d)", c.Args().First(), ticketd.MaxMemberID)
					}
					return ticketd.Forget(c.String("socket"), uint32(id), cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON)))
				},
			},
			simCommand(),
		},
	}
}

func serve(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "serve takes no arguments, got %q", c.Args().First())
	}
	self, _ := cli.ResolveBind(c.String(cli.FlagBind)) // a bad --bind is reported below
	join, err := cli.JoinAddrs(c.String("join"), self, c.String(cli.FlagDNSServer))
	if err != nil {
		return err
	}
	n := c.Int("tickets")
	switch {
	case len(join) == 0 && n == 0:
		return cli.Exitf(cli.ExitUsage, "--tickets N is required to found a pool (or --join a member of one)")
	case n < 0 || n > ticket.MaxTickets:
		return cli.Exitf(cli.ExitUsage, "--tickets must be 1 to %d", ticket.MaxTickets)
	case c.Int("k") < 1 || 2*c.Int("k")+1 > ticket.MaxList:
		return cli.Exitf(cli.ExitUsage, "--k must be 1 to %d", (ticket.MaxList-1)/2)
	case c.Duration("round") < 10*time.Millisecond:
		return cli.Exitf(cli.ExitUsage, "--round must be at least 10ms")
	case c.Duration("max-kill-grace") < 0:
		return cli.Exitf(cli.ExitUsage, "--max-kill-grace must not be negative")
	}
	state := c.String("state-file")
	if c.IsSet("state-file") && state == "" && len(join) == 0 {
		return cli.Exitf(cli.ExitUsage, "founding a pool needs a --state-file: without one a restarted founder would hand out fencing epochs again")
	}
	mb, err := cli.JoinOpen(c, tool, join)
	if err != nil {
		return err
	}
	defer mb.Close()
	cli.ApplyRealtime(c, mb.Log)
	if !c.IsSet("state-file") {
		state = cli.DefaultStateFile(fmt.Sprintf("%s-%s-%d.epoch", tool, strings.ReplaceAll(mb.Cluster, "/", "_"), mb.ID))
	}
	stopProfile, err := cpuProfile(uint32(mb.ID))
	if err != nil {
		return err
	}
	defer stopProfile()
	floor, err := cli.ReadUint(state)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--state-file: %v", err)
	}
	return ticketd.Serve(mb, ticketd.Config{Socket: c.String("socket"), Tickets: n, Join: join, K: c.Int("k"),
		Round: c.Duration("round"), KillGrace: c.Duration("max-kill-grace"), StateFile: state, Floor: floor,
		JoinTimeout: c.Duration("join-timeout")})
}

func runCmd(c *ucli.Context) error {
	if err := cli.SetKillSlackFlag(c, tool); err != nil {
		return err
	}
	// The note that realtime scheduling is off is not for --quiet, which
	// scripts use to keep stderr for the command.
	var log *slog.Logger
	if !c.Bool("quiet") {
		log = cli.NewLogger(os.Stderr, tool, slog.LevelInfo, cli.UseColor(os.Stderr, false))
	}
	cli.ApplyRealtime(c, log)
	return ticketd.Run(claim.RunOptions(c))
}

func holdCmd(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "hold takes no arguments, got %q", c.Args().First())
	}
	return ticketd.Hold(claim.WaitOptions(c), cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON)))
}

// cpuProfile writes a CPU profile of the daemon to
// $ROUNDTABLE_CPUPROFILE.<id> until it stops, when that variable is set (a
// developer's tool for the load benchmark, scripts/bench-ticketd.sh
// PROFILE=1; not a flag: users never need it).
func cpuProfile(id uint32) (func(), error) {
	base := os.Getenv("ROUNDTABLE_CPUPROFILE")
	if base == "" {
		return func() {}, nil
	}
	return cpuprof.Start("ROUNDTABLE_CPUPROFILE", fmt.Sprintf("%s.%d", base, id))
}
