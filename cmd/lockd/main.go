// Command lockd is distributed mutual exclusion for scripts: a daemon per
// host ('lockd serve') and clients ('lockd run', 'hold', 'session',
// 'status', 'watch') that talk to it over a Unix socket. See pkg/lockd
// and pkg/mutex.
package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/claim"
	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/cpuprof"
	"github.com/roundtable-go/roundtable/pkg/lockd"
	"github.com/roundtable-go/roundtable/pkg/mutex"
)

const tool = lockd.Tool

func serveFlags() []ucli.Flag {
	return cli.WithEnv(tool, append(cli.NodeFlags(),
		&ucli.StringFlag{Name: "algo", Value: "central", Usage: "central (coordinator with failover; survives partitions), ricart-agrawala (no coordinator; crash faults only), token-ring (Le Lann's ring with k backup tokens; crash faults only) or voting (m of n coordinator votes; survives partitions)"},
		&ucli.IntFlag{Name: "m", DefaultText: "n/2+1", Usage: "voting only: votes needed, more than n/2"},
		&ucli.IntFlag{Name: "k", DefaultText: "n-1", Usage: "token-ring only: backup copies of the token, kept on the next k members; survives k consecutive crashes; 0 for none ('lockd ring-k' sizes it for big rings)"},
		socketFlag(),
		&ucli.DurationFlag{Name: "lease", Value: mutex.DefaultConfig().Lease, Usage: "grant lease: a partitioned holder loses its lock within 0.9×lease"},
		&ucli.DurationFlag{Name: "heartbeat", Value: 50 * time.Millisecond, Usage: "central: the coordinator election's heartbeat"},
		&ucli.DurationFlag{Name: "election-timeout", Value: 200 * time.Millisecond, Usage: "central: suspect the coordinator after this silence"},
		cli.RealtimeFlag(),
		&ucli.StringFlag{Name: "state-file", Usage: "persist the highest coordinator term (central), Lamport clock (ricart-agrawala), token count (token-ring) or vote counter (voting) here, so tokens keep growing across restarts"},
	))
}

func socketFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "socket", Value: cli.DefaultSocket(tool), DefaultText: "$XDG_RUNTIME_DIR/lockd.sock, else $TMPDIR/roundtable-UID/lockd.sock",
		Usage: "the daemon's control socket"}
}

func clientFlags(extra ...ucli.Flag) []ucli.Flag {
	return cli.WithEnv(tool, append([]ucli.Flag{socketFlag(), cli.JSONFlag()}, extra...))
}

func waitFlags(extra ...ucli.Flag) []ucli.Flag {
	return append(claim.Flags(claim.Help{
		Unavailable: " or has no quorum",
		NonBlock:    "fail at once if the lock is held (exit 75); exit 69 if the daemon gives no answer within 1s",
		Progress:    "who holds the lock and whether there is a quorum",
	}), extra...)
}

func main() { cli.Main(newApp()) }

// newApp is lockd's command line.
func newApp() *ucli.App {
	return &ucli.App{
		Name:  tool,
		Usage: "distributed locks for scripts: fencing tokens, leases, no orphaned children",
		Commands: []*ucli.Command{
			{
				Name:  "serve",
				Usage: "run this host's lock daemon (one per member)",
				Description: `Runs one member of the lock service and serves local clients on --socket
(a Unix socket, mode 0600). Every member must use the same --peers.

SIGHUP re-reads --key-file (see docs/design.md, "Changing the key").

Exit codes: 0 after SIGINT or SIGTERM; 64 usage (a bad flag, peer
list, address, or a --socket in a missing directory); 69 cannot bind, or
the transport failed; 75 another lockd already serves --socket.

Examples:
   lockd serve --id 1 --peers @peers.txt --key-file cluster.key
   lockd serve --id 2 --peers 1=10.0.0.1:7100,2=10.0.0.2:7100,3=10.0.0.3:7100 --socket /run/lockd.sock
   lockd serve --id 3 --peers @peers.txt --algo token-ring --k 2 --state-file /var/lib/lockd/count
   lockd serve --id 4 --peers @peers.txt --algo voting --m 4`,
				Flags:  serveFlags(),
				Action: serve,
			},
			{
				Name:      "run",
				Usage:     "acquire NAME, run a command while holding it, release",
				ArgsUsage: "NAME -- command args...",
				Description: `Acquires NAME through the local daemon, runs the command (directly; with
--shell through /bin/sh -c) with LOCKD_NAME and LOCKD_TOKEN set, and releases
the lock when it exits. LOCKD_TOKEN is a fencing number that only grows for
NAME: give it to what the command writes to, and refuse lower ones.

A wait that lasts a second says on stderr what it waits for (who holds
NAME and since when, whether the service has a quorum, or that the daemon
does not answer), then again every 15s; --quiet silences it. --nonblock
answers within about a second even when the daemon is stopped; --timeout D
ends within D plus 10% and names the cause.

Exit codes: the command's own code, or 128+signal; 75 busy or timed out
(--conflict-exit-code, like flock -E); 76 the lock was lost while the command
ran (it gets SIGTERM, then SIGKILL after --kill-grace); 69 no daemon, a
daemon that does not answer (stopped, starved), or no quorum.
Signals reach the command and its whole process group; when the command
ends, or the lock is lost, whatever it left running in its group (background
jobs) gets SIGTERM, then SIGKILL after --kill-grace, before the lock is
released. The command runs under a watchdog process that outlives lockd
run: if lockd run is killed (even with SIGKILL), or stopped past the lease,
the watchdog ends the command's whole group, background jobs included, by
the lease's end plus --kill-grace.

Examples:
   lockd run backup -- /usr/local/bin/backup.sh
   lockd run --nonblock cron-job -- ./job || echo "someone else is running it"
   lockd run --timeout 30s deploy -- make deploy
   lockd run --quiet --timeout 5m nightly -- ./nightly.sh 2>>nightly.log`,
				// No --json: the command owns stdout, and lockd run prints no events.
				Flags: cli.WithEnv(tool, append([]ucli.Flag{socketFlag()}, waitFlags(
					&ucli.DurationFlag{Name: "kill-grace", Value: 5 * time.Second, Usage: "after the lock is lost: SIGTERM, then SIGKILL after this long"},
					&ucli.BoolFlag{Name: "shell", Usage: "run the command through /bin/sh -c"})...)),
				Action: runCmd,
			},
			{
				Name:      "hold",
				Usage:     "acquire NAME, print it, hold until stdin closes or a signal",
				ArgsUsage: "NAME",
				Description: `Prints 'acquired NAME token T' and holds the lock until stdin closes or a
signal arrives, for coprocesses in shell scripts:

   coproc LOCK { lockd hold db; }
   read -r _ _ _ token <&"${LOCK[0]}"   # acquired db token 8589934593
   ... critical section, fenced by $token ...
   exec {LOCK[1]}>&-                     # release`,
				Flags:  clientFlags(waitFlags()...),
				Action: holdCmd,
			},
			{
				Name:  "session",
				Usage: "take and give back locks by commands on stdin, many times over one connection",
				Description: `Reads commands on stdin and answers each with one line on stdout:

   acquire NAME [D]   wait for NAME, at most D (5s, 500ms) if given:
                      'acquired NAME token T', or 'timeout NAME'
   try NAME           do not wait: 'acquired NAME token T', 'busy NAME', or
                      'unavailable NAME (reason)' when the service cannot
                      decide now (no coordinator or no quorum yet)
   release NAME       'released NAME token T'

For scripts that take locks in a loop: the session is one process and one
connection, so each acquisition costs a round trip to the daemon, not a
process start. A held lock whose lease runs out (the daemon is paused or
gone) or that the daemon revokes is reported on its own line,
'lost NAME token T (reason)': nothing is stopped for you, so fence what
the critical section writes with the token. End of input releases
everything and exits 0; a signal releases everything and exits 128+signal.
If the daemon dies, each held lock is reported lost and the session exits
76 (69 if it held none, or if no daemon serves --socket).

Example:
   coproc LOCK { lockd session; }
   for job in jobs/*; do
     echo "acquire queue" >&"${LOCK[1]}"; read -r _ _ _ token <&"${LOCK[0]}"
     process "$job" "$token"              # critical section, fenced by $token
     echo "release queue" >&"${LOCK[1]}"; read -r _ <&"${LOCK[0]}"
   done
   exec {LOCK[1]}>&-                      # end the session`,
				Flags:  clientFlags(),
				Action: sessionCmd,
			},
			{
				Name:   "status",
				Usage:  "list the cluster's locks, holders, tokens and waiting clients, and this member's state",
				Flags:  clientFlags(),
				Action: statusCmd,
			},
			{
				Name:  "watch",
				Usage: "print grant, release and loss events, one per line: this member's clients', or with --cluster every member's",
				Description: `Prints this member's grant, release and loss events (and coordinator
changes) as they happen. With --cluster, prints the events of every member's
clients instead, each marked with its member; they travel between members
as datagrams, so one lost on the way is missing here. With --ready-file, the
file appears once the member has registered the watcher: a script that waits
for it misses no event of this member's clients afterwards.

Examples:
   lockd watch
   lockd watch --cluster --json | jq -c 'select(.event == "acquired")'`,
				// --ready-file stays out of the environment: LOCKD_READY_FILE is serve's.
				Flags: append(clientFlags(
					&ucli.BoolFlag{Name: "all-members", Aliases: []string{"cluster"}, Usage: "every member's clients' events, not only this member's"}),
					cli.WatchReadyFlag()),
				Action: watchCmd,
			},
			{
				Name:  "ring-k",
				Usage: "size the token ring's backups: the smallest k such that f random crashes among N leave at most k consecutive, with probability ≥ P",
				Description: `Arantes–Sopena: P_k(f, N) = W_k(f, N) / C(N, f), computed exactly.

Examples:
   lockd ring-k --nodes 10000 --failures 1000 --prob 0.99999   # k = 8
   lockd ring-k --nodes 10000 --failures 5000 --prob 0.997     # k = 20`,
				Flags: []ucli.Flag{
					&ucli.IntFlag{Name: "nodes", Usage: "N, processes on the ring"},
					&ucli.IntFlag{Name: "failures", Usage: "f, processes that crash"},
					&ucli.StringFlag{Name: "prob", Value: "0.99", Usage: "P, the probability required"},
					&ucli.BoolFlag{Name: cli.FlagJSON, Usage: "print JSON"},
				},
				Action: ringK,
			},
			votingRiskCommand,
		},
	}
}

func serve(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "serve takes no arguments, got %q", c.Args().First())
	}
	algo, err := mutex.ParseAlgo(c.String("algo"))
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--algo: %v", err)
	}
	// A flag the chosen algorithm would ignore is a mistake worth saying.
	for flag, only := range map[string]mutex.Algo{"k": mutex.TokenRing, "m": mutex.Voting, "heartbeat": mutex.Central, "election-timeout": mutex.Central} {
		if c.IsSet(flag) && algo != only {
			return cli.Exitf(cli.ExitUsage, "--%s is for --algo %s, not %s", flag, only, algo)
		}
	}
	lease := c.Duration("lease")
	if lease < 20*time.Millisecond {
		return cli.Exitf(cli.ExitUsage, "--lease must be at least 20ms")
	}
	stateFile := c.String("state-file")
	term, err := cli.ReadUint(stateFile)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--state-file: %v", err)
	}
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	cli.ApplyRealtime(c, mb.Log)
	// --k: unset is every other member (Config: 0); 0 is none (Config: -1).
	backups := 0
	if c.IsSet("k") {
		switch k := c.Int("k"); {
		case k < 0 || k > len(mb.Peers)-1:
			return cli.Exitf(cli.ExitUsage, "--k must be 0 to n-1 = %d", len(mb.Peers)-1)
		case k == 0:
			backups = -1
		default:
			backups = k
		}
	}
	m, err := mutex.New(mutex.Config{ID: mb.ID, Peers: cli.IDs(mb.Peers), Algo: algo, Lease: lease, Term: term,
		Boot: mb.Incarnation, Backups: backups, Quorum: c.Int("m"),
		Heartbeat: c.Duration("heartbeat"), Timeout: c.Duration("election-timeout"),
		Rand: rand.New(rand.NewPCG(mb.Incarnation, uint64(mb.ID)))})
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	stopProfile, err := cpuProfile(uint32(mb.ID))
	if err != nil {
		return err
	}
	defer stopProfile()
	return lockd.Serve(mb, m, lockd.Config{Lease: lease, StateFile: stateFile, Persisted: term, Socket: c.String("socket")})
}

// cpuProfile writes a CPU profile of the daemon to
// $ROUNDTABLE_CPUPROFILE.<id> until it stops, when that variable is set (a
// developer's tool for TestTenThousandLocks and the load benchmarks; not a
// flag: users never need it).
func cpuProfile(id uint32) (func(), error) {
	base := os.Getenv("ROUNDTABLE_CPUPROFILE")
	if base == "" {
		return func() {}, nil
	}
	return cpuprof.Start("ROUNDTABLE_CPUPROFILE", fmt.Sprintf("%s.%d", base, id))
}
