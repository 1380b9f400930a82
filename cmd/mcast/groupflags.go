package main

import (
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mcastd"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// groupFlags are the flags of a dynamic group member, shared by 'mcast
// run' and 'mcast bench' (one environment variable, one meaning).
var groupFlags = []ucli.Flag{
	&ucli.BoolFlag{Name: "views", Usage: "a dynamic group: members join and leave, failed ones are removed, and each installed view is printed (implied by --order total)"},
	&ucli.StringFlag{Name: "total", Value: "sequencer", Usage: "with --order total: how the one order is made: " + group.TotalUsage()},
	&ucli.BoolFlag{Name: "safe", Usage: "with --views: deliver a message only once every member of the view has it; at a view change the rest follows a 'transitional' line naming the members it is safe among"},
	&ucli.IntFlag{Name: "start-with", DefaultText: "every member in --peers", Usage: "with --views: hold the first lines until a view has this many members (0: send at once)"},
	&ucli.StringFlag{Name: "join", Usage: "with --views: join through these members (IDs from --peers, comma-separated; default every other peer)"},
	&ucli.BoolFlag{Name: "found", Usage: "with --views: create the group now instead of joining (only the first member of a new group)"},
	partitionsFlag,
}

// partitionsFlag is --partitions, for 'mcast run' and 'mcast check'.
var partitionsFlag = &ucli.StringFlag{Name: "partitions", Value: "primary", Usage: "with --views: primary (only a majority of the last view goes on; the rest waits) or evs (every side of a partition goes on in its own view, and the sides merge when they hear each other: extended virtual synchrony)"}

// groupOnly names the flags that need a dynamic group.
var groupOnly = []string{"join", "found", "safe", "start-with", "partitions"}

// isGroup reports whether the command line asks for a dynamic group.
func isGroup(c *ucli.Context) bool { return c.String("order") == "total" || c.Bool("views") }

// groupConfig reads a group member's options from the command line
// (--order, --total, --safe, --start-with, --join, --found, --partitions,
// --period, --suspect) and hands them, typed, to mcastd.NewGroupConfig.
func groupConfig(c *ucli.Context, mb *cli.Member) (group.Config, error) {
	var o mcastd.GroupOptions
	var err error
	switch ord := c.String("order"); ord {
	case "total":
		if o.Total, err = mcastd.ParseTotal(c.String("total")); err != nil {
			return group.Config{}, err
		}
	case "fifo":
	default:
		return group.Config{}, cli.Exitf(cli.ExitUsage, "--views goes with --order fifo or total, not %s", ord)
	}
	if c.IsSet("join") {
		o.Join = []node.ID{}
		for _, f := range strings.Split(c.String("join"), ",") {
			id, err := node.ParseID(strings.TrimSpace(f))
			if err != nil {
				return group.Config{}, cli.Exitf(cli.ExitUsage, "--join: %q is not another member in --peers", f)
			}
			o.Join = append(o.Join, id)
		}
	}
	if o.EVS, err = mcastd.ParsePartitions(c.String("partitions")); err != nil {
		return group.Config{}, err
	}
	o.StartWith = -1
	if c.IsSet("start-with") {
		o.StartWith = c.Int("start-with")
	}
	o.Safe, o.Found, o.Period, o.Suspect = c.Bool("safe"), c.Bool("found"), c.Duration("period"), c.Duration("suspect")
	cfg, err := mcastd.NewGroupConfig(mb.ID, mb.Incarnation, cli.IDs(mb.Peers), o)
	if err != nil {
		return cfg, cli.Exitf(cli.ExitUsage, "%v", err)
	}
	return cfg, nil
}
