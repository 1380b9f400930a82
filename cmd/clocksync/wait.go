package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/clockd"
	"github.com/roundtable-go/roundtable/pkg/driver"
)

var waitCommand = &ucli.Command{
	Name:  "wait",
	Usage: "wait until this host's time server, or a Berkeley group, is within --max-offset (for ExecStartPre=)",
	Description: `Asks the NTP server --server (default: a 'clocksync serve' on this host)
until it is synchronised and this host's clock is within --max-offset of it:
|offset| plus the server's root distance, the bound RFC 5905 gives on the
true error. With --peers, asks the Berkeley members instead, until every
one answers and their clocks lie within --max-offset of each other.
Prints one line of progress a second on stderr. Exit 0 once within,
75 when --timeout passes first, 64 on bad flags.

Examples:
   clocksync wait --max-offset 100ms --timeout 60s
   clocksync wait --server 10.0.0.1:123 --max-offset 10ms --timeout 5m
   clocksync wait --peers @peers.txt --max-offset 50ms --timeout 30s`,
	// query's --timeout (per answer) has CLOCKSYNC_TIMEOUT; one variable
	// means one thing, so this one has its own.
	Flags: append(cli.WithEnv(tool, append(cli.DropFlags(cli.ClientFlags(), cli.FlagJSON),
		&ucli.StringFlag{Name: "server", Value: "127.0.0.1:12300", Usage: "the NTP server to compare this host's clock with (HOST:PORT)"},
		&ucli.DurationFlag{Name: "max-offset", Value: 100 * time.Millisecond, Usage: "done once the clock is known to be within this"},
		&ucli.StringFlag{Name: cli.FlagTransport, Value: "udp", Usage: "udp or tcp"},
	)), &ucli.DurationFlag{Name: "timeout", Value: time.Minute, EnvVars: []string{"CLOCKSYNC_WAIT_TIMEOUT"},
		Usage: "give up (exit 75) after this"}),
	Action: waitCmd,
}

func waitCmd(c *ucli.Context) error {
	if c.NArg() > 0 {
		return cli.Exitf(cli.ExitUsage, "wait takes no arguments, not %q", c.Args().First())
	}
	cfg := clockd.WaitConfig{MaxOffset: c.Duration("max-offset"), Timeout: c.Duration("timeout"), Progress: os.Stderr}
	if cfg.MaxOffset <= 0 || cfg.Timeout <= 0 {
		return cli.Exitf(cli.ExitUsage, "--max-offset and --timeout must be > 0")
	}
	if c.String(cli.FlagPeers) == "" {
		probe, err := clockd.ProbeServer(c.String("server"))
		if err != nil {
			return err
		}
		cfg.Probe = probe
		return clockd.Wait(cfg)
	}
	if c.IsSet("server") {
		return cli.Exitf(cli.ExitUsage, "give --server or --peers, not both")
	}
	cm, err := cli.Setup(c, tool)
	if err != nil {
		return err
	}
	ids := cli.IDs(cm.Peers)
	cfg.Probe = func(wait time.Duration) clockd.Reading {
		replies, err := cm.Query(context.Background(), ids, max(wait, 100*time.Millisecond))
		if err != nil {
			return clockd.Reading{Why: err.Error()}
		}
		if len(replies) < len(ids) {
			return clockd.Reading{Why: fmt.Sprintf("%d of %d members answered", len(replies), len(ids))}
		}
		var lo, hi time.Duration
		for i, id := range ids {
			_, off := berkeleyStatus(replies[id])
			if i == 0 || off < lo {
				lo = off
			}
			if i == 0 || off > hi {
				hi = off
			}
		}
		return clockd.Reading{OK: true, Bound: hi - lo, Text: fmt.Sprintf("%d members spread %.6fs", len(ids), (hi - lo).Seconds())}
	}
	return clockd.Wait(cfg)
}

// berkeleyStatus is a Berkeley member's master and offset from this host's
// clock, from its status reply.
func berkeleyStatus(r driver.StatusReply) (master uint32, offset time.Duration) {
	var st struct {
		Master uint32 `json:"master"`
		Offset int64  `json:"offset_ns"`
	}
	_ = json.Unmarshal(r.Status, &st)
	return st.Master, time.Duration(st.Offset)
}
