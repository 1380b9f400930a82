package main

import (
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/termination"
	"github.com/roundtable-go/roundtable/pkg/terminationd"
)

var terminateFlags = cli.WithEnv(tool, append(cli.NodeFlags(),
	&ucli.IntFlag{Name: "backups", Value: 1, Usage: "back the marker up on the next K processes: the detection survives K consecutive crashed processes"},
	&ucli.BoolFlag{Name: "passive", Usage: "start passive (no work of its own until some arrives)"},
	&ucli.DurationFlag{Name: "heartbeat", Value: 50 * time.Millisecond, Usage: "how often a backup probes the processes it watches, and unacknowledged work, marker or announcement is resent"},
	&ucli.DurationFlag{Name: "timeout", Value: 200 * time.Millisecond, Usage: "a watched process silent this long, or work, marker or announcement unacknowledged this long, counts as crashed; ≥ 2×heartbeat, > the longest delivery; on a lossy network many heartbeats"},
))

var terminateCommand = &ucli.Command{
	Name:  "terminate",
	Usage: "take part in a distributed job; print 'terminated' when every process is passive and no work is in flight",
	Description: `Runs one process of a distributed job and detects its end: a marker goes
round the ring of processes (ascending IDs) and, once every live process has
been passive and has sent no work since the marker's last visit, every live
process prints 'terminated (crashed [IDs])' and exits 0.

The job talks to it on stdin, one line at a time:
   send ID   one unit of work to process ID (only while active; the
             process prints 'work from ID' when work arrives, and is active)
   idle      this process has nothing more to do (the end of stdin is 'idle')
A line it does not understand, or 'send' while passive, exits 64.

The marker is backed up on the next --backups processes: if the process
holding it crashes, the next live one takes over, without an election, as
long as no more than --backups consecutive processes crash.

Work, the marker and the announcement are acknowledged and resent every
--heartbeat until acknowledged, so the detection survives lost and
duplicated datagrams; the process that announces the end exits once every
live process has acknowledged it (or --timeout has passed).

Examples:
   (echo 'send 2'; echo idle) | consensus terminate --id 1 --peers @peers.txt --insecure
   consensus terminate --id 2 --peers @peers.txt --passive --backups 2 < job-2.fifo`,
	Flags:  terminateFlags,
	Action: terminate,
}

func terminate(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "unexpected argument %q", c.Args().First())
	}
	cfg := termination.Config{Backups: c.Int("backups"), Active: !c.Bool("passive"),
		Heartbeat: c.Duration("heartbeat"), Timeout: c.Duration("timeout")}
	if cfg.Backups < 0 || cfg.Heartbeat <= 0 || cfg.Timeout < 2*cfg.Heartbeat {
		return cli.Exitf(cli.ExitUsage, "want --backups ≥ 0, --heartbeat > 0 and --timeout ≥ 2×heartbeat")
	}
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	return terminationd.Run(mb, cfg, os.Stdin)
}
