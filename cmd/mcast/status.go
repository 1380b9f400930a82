package main

import (
	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mcastd"
)

var statusFlags = cli.WithEnv(tool, append(cli.ClientFlags(), cli.QueryFlags()...))

func statusCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "status",
		Usage: "ask the members of a dynamic group what they see: view, leader, per-sender received/aru/delivered, queues",
		Description: `Queries every member in --peers (mcast run --views or --order total) and
prints one line per member that answers: its view and leader, whether a
view change is under way, and per sender of the view (in view order) how
many messages it has received without a gap, how many every member holds
as far as it has heard (aru), and how many it has delivered; then what it
has sent, what waits to be sent (queue) and what some member has not yet
acknowledged (unacked). Exits 69 when nobody answers, 75 when the members
that answer are not in one view.

Examples:
   mcast status --peers @peers.txt
   mcast status --peers @peers.txt --json`,
		Flags:  statusFlags,
		Action: status,
	}
}

func status(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "status takes no arguments, got %q", c.Args().First())
	}
	cm, replies, err := cli.QueryStatus(c, tool)
	if err != nil {
		return err
	}
	return mcastd.Status(cm.Out, cli.IDs(cm.Peers), replies)
}
