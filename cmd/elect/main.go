// Command elect runs leader election among a fixed set of processes:
// bully, ring (with member list) or Chang–Roberts. See pkg/election.
package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/electd"
	"github.com/roundtable-go/roundtable/pkg/election"
	"github.com/roundtable-go/roundtable/pkg/node"
)

const tool = "elect"

var defaults = election.DefaultConfig()

var runFlags = cli.WithEnv(tool, append(cli.NodeFlags(),
	&ucli.StringFlag{Name: "algo", Value: defaults.Algo.String(), Usage: "bully, ring or chang-roberts"},
	&ucli.Uint64Flag{Name: "priority", DefaultText: "the ID", Usage: "election priority; the live process with the highest wins"},
	&ucli.DurationFlag{Name: "heartbeat", Value: defaults.Heartbeat, Usage: "leader heartbeat period"},
	&ucli.DurationFlag{Name: "timeout", Value: defaults.Timeout, Usage: "suspect the leader after this silence; > heartbeat + MDT + MHT, ≥ 2×heartbeat"},
	&ucli.DurationFlag{Name: "answer-timeout", Value: defaults.AnswerTimeout, Usage: "wait for an answer or ring acknowledgement; > 2·MDT + MHT"},
	&ucli.StringFlag{Name: "state-file", Usage: "persist the highest term and the last ELECT_FENCE here, so both keep growing across restarts"},
	&ucli.DurationFlag{Name: "kill-grace", Value: 5 * time.Second, Usage: "after leadership is lost: SIGTERM the child, then SIGKILL after this long"},
	cli.KillSlackFlag(),
	cli.RealtimeFlag(),
	&ucli.BoolFlag{Name: "rerun", Usage: "with a child: stay in the election after losing leadership and run the child again on every new term"},
	// Value is only the scale a bare number's hint suggests (--lease 200:
	// "did you mean 200ms?"); an unset --lease follows --timeout (run).
	&ucli.DurationFlag{Name: "lease", Value: defaults.Timeout, DefaultText: "the timeout", Usage: "run the command only while a majority has acknowledged this leader within this long; 0: lead without a majority (faster, but two commands can overlap under partitions or pauses)"},
	&ucli.IntFlag{Name: "awareness", Value: defaults.Awareness, Usage: "local health: a member whose own timers fire late stretches its timeouts and asks for longer lease promises, up to (1+N)×; 0 turns it off"},
	&ucli.Float64Flag{Name: "clock-drift", Value: 0.01, Usage: "the largest difference in clock rate between any member and real time (0.01 = 1%); leases are shortened by it"},
	&ucli.IntFlag{Name: "backups", Usage: "chang-roberts: back every claim up on the next K members, so that the election survives K consecutive crashed claim holders; 0: acknowledged hops"},
))

var statusFlags = cli.WithEnv(tool, append(cli.ClientFlags(), cli.QueryFlags()...))

func main() { cli.Main(newApp()) }

// newApp is the command line.
func newApp() *ucli.App {
	return &ucli.App{
		Name:  tool,
		Usage: "leader election for shell scripts and clusters (bully, ring, Chang–Roberts)",
		Commands: []*ucli.Command{
			{
				Name:      "run",
				Usage:     "take part in the election; print 'leader ID term T' on every change",
				ArgsUsage: "[-- command args...]",
				Description: `Runs one member. Every change of leader is printed on stdout as
'leader <id> term <term>' (JSON lines with --json), and on the leader
'lease held term <term>' once a majority of the members (the leader
included) has acknowledged it, 'lease lost term <term> (<reason>)' when that
ends.

With '-- command', the command runs only while this member holds the lease,
with ELECT_LEADER, ELECT_TERM, ELECT_ID and ELECT_FENCE in its environment.
ELECT_FENCE is the fencing number: unique to each command run and higher
than every earlier one, on this member (across lost leases and, with
--state-file, restarts) and across leaders (a later term's is higher);
ELECT_TERM repeats when a lease is lost and taken again within one term.

Members acknowledge no other leader until their acknowledgement has run
out, so no two commands ever run at once, even across partitions, pauses (SIGSTOP) and
clock drift up to --clock-drift: a watchdog process kills the command at
the lease's end even if elect itself is stopped. When the lease is lost the
command gets SIGTERM, then SIGKILL after --kill-grace or at the lease's end,
whichever is first, and elect exits 76 (or, with --rerun, waits to lead
again). The watchdog's deadline is the lease's end less --kill-slack, or
less twice the worst lateness of its own timers over the last 10s when
that is more (a starved host stops the command earlier rather than late);
a lease with less left than the slack starts nothing. When the command exits by itself, elect resigns and exits with the
command's code. --lease 0 runs the command as soon as this member leads,
without a majority: failover is faster, but a partitioned or paused leader's
command can overlap the next one's for up to --timeout.

Examples:
   elect run --id 1 --peers 1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003
   elect run --algo ring --id 2 --peers @peers.txt --json
   elect run --id 3 --peers @peers.txt --key-file cluster.key -- ./serve-primary.sh
   elect run --peers srv:_elect._udp.example.com --advertise 10.0.0.3:7000 --key-file cluster.key
   ELECT_PEERS=@peers.txt ELECT_ID=1 elect run -- sh -c 'echo "I lead term $ELECT_TERM"; sleep 60'`,
				Flags:  runFlags,
				Action: run,
			},
			{
				Name:  "status",
				Usage: "ask the members who leads; exit 0 only if a majority answers and agrees on a live leader",
				Description: `Queries every member and prints the leader and term they agree on,
then one line per member. Exits 0, with 'leader L term T' as the first line,
only when a majority of the members answered, every answering member names
the same leader and term, and that leader answered too, leading that term.
Otherwise the first line says why and the exit is
69: 'no leader yet' (the first election has not ended), 'no majority' (too
few members answered for any leader to hold a lease), 'no live leader' (the
members still follow a leader that does not answer: killed, stopped or cut
off, until their --timeout runs out), 'disagreement' (a change of leader is
under way, or a member is cut off). Any exit but 0 means: do not act as if
this leader held.

Examples:
   elect status --peers @peers.txt
   elect status --peers 1=127.0.0.1:7001,2=127.0.0.1:7002 --json`,
				Flags:  statusFlags,
				Action: status,
			},
			superpeersCommand,
		},
	}
}

// run parses the flags into electd's Config; the service runs the member.
func run(c *ucli.Context) error {
	algo, err := election.ParseAlgo(c.String("algo"))
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--algo: %v", err)
	}
	stateFile := c.String("state-file")
	state, err := cli.ReadUints(stateFile, 2) // the highest term seen, the last ELECT_FENCE
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--state-file: %v", err)
	}
	ec := election.Config{
		Algo: algo, Priority: c.Uint64("priority"),
		Heartbeat: c.Duration("heartbeat"), Timeout: c.Duration("timeout"), AnswerTimeout: c.Duration("answer-timeout"),
		Term: state[0], Drift: c.Float64("clock-drift"), Awareness: c.Int("awareness"),
		Backups: c.Int("backups"),
	}
	switch n := c.Int("awareness"); {
	case n < 0 || n > 20:
		return cli.Exitf(cli.ExitUsage, "--awareness must be between 0 and 20, got %d", n)
	case n == 0:
		ec.Awareness = -1 // off
	}
	if ec.Heartbeat <= 0 || ec.Timeout <= 0 || ec.AnswerTimeout <= 0 {
		return cli.Exitf(cli.ExitUsage, "--heartbeat, --timeout and --answer-timeout must be positive")
	}
	if c.IsSet("lease") {
		ec.Lease = c.Duration("lease")
	} else if ec.Lease = ec.Timeout; ec.Lease < 2*ec.Heartbeat {
		ec.Lease = 2 * ec.Heartbeat
	}
	if c.Duration("kill-slack") < 0 {
		return cli.Exitf(cli.ExitUsage, "--kill-slack must not be negative")
	}
	if ec.Drift <= 0 || ec.Drift >= 0.2 {
		return cli.Exitf(cli.ExitUsage, "--clock-drift must be above 0 and below 0.2, got %v", ec.Drift)
	}
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	cli.SetKillSlack(c.Duration("kill-slack"), mb.Log)
	cli.ApplyRealtime(c, mb.Log)
	return electd.Run(mb, electd.Config{Election: ec, Child: c.Args().Slice(), StateFile: stateFile, Fence: state[1],
		KillGrace: c.Duration("kill-grace"), Rerun: c.Bool("rerun")})
}

type memberStatus struct {
	ID      node.ID           `json:"id"`
	Leader  node.ID           `json:"leader"`
	Term    uint64            `json:"term"`
	State   string            `json:"state"`
	Addr    string            `json:"addr"`
	Counter map[string]uint64 `json:"counters"`
}

func status(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "status takes no arguments, got %q", c.Args().First())
	}
	cm, replies, err := cli.QueryStatus(c, tool)
	if err != nil {
		return err
	}
	var members []memberStatus
	for id, r := range replies {
		var st struct {
			Leader node.ID `json:"leader"`
			Term   uint64  `json:"term"`
			State  string  `json:"state"`
		}
		_ = json.Unmarshal(r.Status, &st)
		members = append(members, memberStatus{ID: id, Leader: st.Leader, Term: st.Term, State: st.State, Addr: r.Addr, Counter: r.Counters})
	}
	sort.Slice(members, func(i, j int) bool { return members[i].ID < members[j].ID })
	v := judge(members, len(cm.Peers))
	var silent []node.ID
	for _, id := range cli.IDs(cm.Peers) {
		if _, ok := replies[id]; !ok {
			silent = append(silent, id)
		}
	}
	if c.Bool(cli.FlagJSON) {
		sum := map[string]any{"event": "status", "agreed": v.agreed, "no_leader": v.noLeader, "majority": v.majority,
			"live": v.live, "members": members, "silent": silent}
		if v.agreed {
			sum["leader"], sum["term"] = members[0].Leader, members[0].Term
		}
		cm.Out.JSON(sum)
	} else {
		if len(members) > 0 {
			cm.Out.Line(v.head(members))
		}
		for _, m := range members {
			cm.Out.Line(fmt.Sprintf("member %d %s leader %d term %d addr %s dropped_auth %d dropped_replay %d",
				m.ID, m.State, m.Leader, m.Term, m.Addr, m.Counter["dropped_auth"]+m.Counter["dropped_unsealed"], m.Counter["dropped_replay"]))
		}
		for _, id := range silent {
			cm.Out.Line(fmt.Sprintf("member %d silent", id))
		}
	}
	switch {
	case len(members) == 0:
		return cli.Exitf(cli.ExitUnavailable, "no member answered within %v", c.Duration("wait"))
	case v.noLeader:
		return cli.Exitf(cli.ExitUnavailable, "no leader yet: the first election has not ended")
	case !v.majority:
		return cli.Exitf(cli.ExitUnavailable, "only %d of %d members answered within %v: no majority, so no leader can hold", len(members), len(cm.Peers), c.Duration("wait"))
	case !v.agreed:
		return cli.Exitf(cli.ExitUnavailable, "members disagree on the leader: a change of leader is under way, or a member is cut off")
	case !v.live:
		return cli.Exitf(cli.ExitUnavailable, "the members follow %d (term %d), which does not answer as their leader: killed, stopped, cut off or stepped down, until their --timeout runs out", members[0].Leader, members[0].Term)
	}
	return nil
}

// verdict is what status concludes from the answers.
type verdict struct {
	majority bool // more than half of all members answered
	noLeader bool // no answering member follows a leader yet
	agreed   bool // every answering member names the same leader and term
	live     bool // that leader answered, leading that term
}

// judge reads the answers of n members. A leader counts only if a
// majority of all members answered, all of them name it, and it answered
// itself as the leader of that term: followers name a killed leader until
// their timeout, and a member cut off from the rest may still lead
// itself.
func judge(members []memberStatus, n int) verdict {
	v := verdict{majority: len(members) > n/2, agreed: len(members) > 0, noLeader: len(members) > 0}
	for _, m := range members {
		if m.Leader != members[0].Leader || m.Term != members[0].Term || m.Leader == node.None {
			v.agreed = false
		}
		if m.Leader != node.None {
			v.noLeader = false
		}
	}
	if v.agreed {
		for _, m := range members {
			if m.ID == members[0].Leader && m.State == "leader" && m.Term == members[0].Term {
				v.live = true
			}
		}
	}
	return v
}

// head is status's first line: "leader L term T" only when the exit is 0.
func (v verdict) head(members []memberStatus) string {
	switch {
	case v.noLeader:
		return "no leader yet"
	case !v.majority:
		return "no majority"
	case !v.agreed:
		return "disagreement"
	case !v.live:
		return "no live leader"
	}
	return fmt.Sprintf("leader %d term %d", members[0].Leader, members[0].Term)
}
