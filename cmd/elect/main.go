// Command elect runs leader election among a fixed set of processes:
// bully, ring (with member list) or Chang–Roberts. See pkg/election.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
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
	&ucli.StringFlag{Name: "state-file", Usage: "persist the highest term here, so terms keep growing across restarts"},
	&ucli.DurationFlag{Name: "kill-grace", Value: 5 * time.Second, Usage: "after leadership is lost: SIGTERM the child, then SIGKILL after this long"},
	&ucli.BoolFlag{Name: "rerun", Usage: "with a child: stay in the election after losing leadership and run the child again on every new term"},
))

var statusFlags = cli.WithEnv(tool, append(cli.ClientFlags(),
	&ucli.DurationFlag{Name: "wait", Value: time.Second, Usage: "how long to wait for answers"},
	&ucli.StringFlag{Name: cli.FlagTransport, Value: "udp", Usage: "udp or tcp"},
))

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
'leader <id> term <term>' (JSON lines with --json). With '-- command', the
command runs only while this member leads, with ELECT_LEADER, ELECT_TERM and
ELECT_ID in its environment; if leadership is lost it gets SIGTERM, then
SIGKILL after --kill-grace, and elect exits 76 (or, with --rerun, waits to
lead again). When the command exits by itself, elect resigns and exits with
the command's code.

Examples:
   elect run --id 1 --peers 1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003
   elect run --algo ring --id 2 --peers @peers.txt --json
   elect run --id 3 --peers @peers.txt --key-file cluster.key -- ./serve-primary.sh
   ELECT_PEERS=@peers.txt ELECT_ID=1 elect run -- sh -c 'echo "I lead term $ELECT_TERM"; sleep 60'`,
				Flags:  runFlags,
				Action: run,
			},
			{
				Name:  "status",
				Usage: "ask the members who leads; exit 69 if none answers or none leads yet, 75 if they disagree",
				Description: `Queries every member and prints the leader and term they agree on,
then one line per member. Exits 0 when every answering member names the same
leader and term; 75 when they disagree; 69 when nobody answers, or when
no answering member follows a leader yet ('no leader yet': the first
election has not ended).

Examples:
   elect status --peers @peers.txt
   elect status --peers 1=127.0.0.1:7001,2=127.0.0.1:7002 --json`,
				Flags:  statusFlags,
				Action: status,
			},
		},
	}
}

func run(c *ucli.Context) error {
	algo, err := election.ParseAlgo(c.String("algo"))
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--algo: %v", err)
	}
	child := c.Args().Slice()
	stateFile := c.String("state-file")
	startTerm, err := cli.ReadUint(stateFile)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--state-file: %v", err)
	}
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	self, cm := mb.ID, mb.Common
	cfg := election.Config{
		ID: self, Peers: cli.IDs(cm.Peers), Algo: algo, Priority: c.Uint64("priority"),
		Heartbeat: c.Duration("heartbeat"), Timeout: c.Duration("timeout"), AnswerTimeout: c.Duration("answer-timeout"),
		Term: startTerm, Rand: rand.New(rand.NewPCG(mb.Incarnation, uint64(self))),
	}
	if cfg.Heartbeat <= 0 || cfg.Timeout <= 0 || cfg.AnswerTimeout <= 0 {
		return cli.Exitf(cli.ExitUsage, "--heartbeat, --timeout and --answer-timeout must be positive")
	}
	m, err := election.New(cfg)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	drv := driver.New[election.Msg](m, election.Codec{}, mb.Net, driver.Config{Framer: mb.Framer, Log: cm.Log})
	live, err := mb.Start(drv, "algo", algo, "heartbeat", cfg.Heartbeat, "timeout", cfg.Timeout, "term", startTerm)
	if err != nil {
		return err
	}
	defer live.Stop()

	// retire resigns leadership (so the others need not wait for a timeout)
	// and stops the node.
	retire := func() {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
		_ = drv.Request(rctx, election.Msg{Type: election.MsgRetire})
		rcancel()
		live.Stop()
	}
	var (
		kid      *cli.Child
		kidDone  <-chan struct{}
		leading  bool
		lastTerm = startTerm
		grace    = c.Duration("kill-grace")
	)
	for {
		select {
		case err := <-live.Done:
			return cli.Failed(err)
		case ev := <-live.Events:
			switch ev := ev.(type) {
			case election.LeaderEvent:
				cm.Out.Event(ev)
				if ev.Term > lastTerm {
					lastTerm = ev.Term
					if err := cli.WriteUint(stateFile, ev.Term); err != nil {
						cm.Log.Error("cannot persist term", "err", err)
					}
				}
				leading = ev.Self
				if ev.Self {
					cm.Log.Info("leading", "term", ev.Term)
				}
				if ev.Self && len(child) > 0 && kid == nil {
					env := []string{"ELECT_LEADER=" + ev.Leader.String(), "ELECT_TERM=" + strconv.FormatUint(ev.Term, 10),
						"ELECT_ID=" + self.String()}
					if kid, err = cli.StartChild(child, env); err != nil {
						retire()
						return err
					}
					kidDone = kid.Done()
					cm.Log.Info("child started", "pid", kid.Pid(), "term", ev.Term)
				}
			case election.StepDownEvent:
				cm.Log.Warn("stepped down", "term", ev.Term, "reason", ev.Reason)
				leading = false
			}
			if !leading && kid != nil {
				cm.Log.Warn("leadership lost: stopping child", "pid", kid.Pid(), "grace", grace)
				kid.Stop(grace)
				kid, kidDone = nil, nil
				if !c.Bool("rerun") {
					retire()
					return cli.Exitf(cli.ExitLost, "leadership lost while the command ran")
				}
			}
		case <-kidDone:
			code := kid.ExitCode()
			cm.Log.Info("child exited; resigning", "code", code)
			retire()
			return &cli.ExitError{Code: code}
		case s := <-live.Signals:
			sig := s.(syscall.Signal)
			if kid != nil {
				// Forward, and keep going until the child decides.
				cm.Log.Info("forwarding signal to child", "signal", sig)
				kid.Signal(sig)
				continue
			}
			cm.Log.Info("signal: resigning", "signal", sig)
			retire()
			if len(child) > 0 {
				return &cli.ExitError{Code: cli.SignalCode(sig)}
			}
			return nil
		}
	}
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
	cm, err := cli.Setup(c, tool)
	if err != nil {
		return err
	}
	replies, err := cm.QueryAll(c)
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
	agreed := len(members) > 0
	for _, m := range members {
		if m.Leader != members[0].Leader || m.Term != members[0].Term || m.Leader == node.None {
			agreed = false
		}
	}
	noLeader := len(members) > 0
	for _, m := range members {
		if m.Leader != node.None {
			noLeader = false
		}
	}
	var silent []node.ID
	for _, id := range cli.IDs(cm.Peers) {
		if _, ok := replies[id]; !ok {
			silent = append(silent, id)
		}
	}
	if c.Bool(cli.FlagJSON) {
		sum := map[string]any{"event": "status", "agreed": agreed, "no_leader": noLeader, "members": members, "silent": silent}
		if agreed {
			sum["leader"], sum["term"] = members[0].Leader, members[0].Term
		}
		cm.Out.JSON(sum)
	} else {
		switch {
		case agreed:
			cm.Out.Line(fmt.Sprintf("leader %d term %d", members[0].Leader, members[0].Term))
		case noLeader:
			cm.Out.Line("no leader yet")
		case len(members) > 0:
			cm.Out.Line("disagreement")
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
	case noLeader:
		return cli.Exitf(cli.ExitUnavailable, "no leader yet: the first election has not ended")
	case !agreed:
		return cli.Exitf(cli.ExitBusy, "members disagree on the leader")
	}
	return nil
}
