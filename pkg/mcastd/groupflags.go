package mcastd

import (
	"slices"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// GroupFlags are the flags of a dynamic group member, shared by 'mcast
// run' and 'mcast bench' (one environment variable, one meaning).
var GroupFlags = []ucli.Flag{
	&ucli.BoolFlag{Name: "views", Usage: "a dynamic group: members join and leave, failed ones are removed, and each installed view is printed (implied by --order total)"},
	&ucli.StringFlag{Name: "total", Value: "sequencer", Usage: "with --order total: how the one order is made: sequencer (the view's leader numbers every message), lamport (Lamport times, acknowledged by everyone), isis (priorities proposed by every member, agreed by the sender) or totem (a token goes round; its holder numbers what it sends)"},
	&ucli.BoolFlag{Name: "safe", Usage: "with --views: deliver a message only once every member of the view has it; at a view change the rest follows a 'transitional' line naming the members it is safe among"},
	&ucli.IntFlag{Name: "start-with", DefaultText: "every member in --peers", Usage: "with --views: hold the first lines until a view has this many members (0: send at once)"},
	&ucli.StringFlag{Name: "join", Usage: "with --views: join through these members (IDs from --peers, comma-separated; default every other peer)"},
	&ucli.BoolFlag{Name: "found", Usage: "with --views: create the group now instead of joining (only the first member of a new group)"},
	PartitionsFlag,
}

// PartitionsFlag is --partitions, for 'mcast run' and 'mcast check'.
var PartitionsFlag = &ucli.StringFlag{Name: "partitions", Value: "primary", Usage: "with --views: primary (only a majority of the last view goes on; the rest waits) or evs (every side of a partition goes on in its own view, and the sides merge when they hear each other: extended virtual synchrony)"}

// GroupOnly names the flags that need a dynamic group.
var GroupOnly = []string{"join", "found", "safe", "start-with", "partitions"}

// IsGroup reports whether the command line asks for a dynamic group.
func IsGroup(c *ucli.Context) bool { return c.String("order") == "total" || c.Bool("views") }

// GroupConfig reads a group member's configuration from the command line
// (--order, --total, --safe, --start-with, --join, --found, --period,
// --suspect) for member mb.
func GroupConfig(c *ucli.Context, mb *cli.Member) (mcast.GroupConfig, error) {
	var total mcast.Total
	switch o := c.String("order"); o {
	case "total":
		switch t := c.String("total"); t {
		case "sequencer":
			total = mcast.TotalSequencer
		case "lamport":
			total = mcast.TotalLamport
		case "isis":
			total = mcast.TotalISIS
		case "totem":
			total = mcast.TotalTotem
		default:
			return mcast.GroupConfig{}, cli.Exitf(cli.ExitUsage, "--total: %q is not one of: sequencer, lamport, isis, totem", t)
		}
	case "fifo":
	default:
		return mcast.GroupConfig{}, cli.Exitf(cli.ExitUsage, "--views goes with --order fifo or total, not %s", o)
	}
	self := mb.ID
	peers := cli.IDs(mb.Peers)
	contacts := slices.DeleteFunc(slices.Clone(peers), func(id node.ID) bool { return id == self })
	if c.IsSet("join") {
		contacts = nil
		for _, f := range strings.Split(c.String("join"), ",") {
			id, err := node.ParseID(strings.TrimSpace(f))
			if err != nil || !slices.Contains(peers, id) || id == self {
				return mcast.GroupConfig{}, cli.Exitf(cli.ExitUsage, "--join: %q is not another member in --peers", f)
			}
			contacts = append(contacts, id)
		}
	}
	cfg := mcast.GroupConfig{ID: self, Inc: mb.Incarnation, Found: c.Bool("found"), Contacts: contacts, Total: total,
		Safe: c.Bool("safe"), StartWith: len(peers)}
	switch p := c.String("partitions"); p {
	case "primary":
	case "evs":
		cfg.EVS = true
	default:
		return mcast.GroupConfig{}, cli.Exitf(cli.ExitUsage, "--partitions: %q is not one of: primary, evs", p)
	}
	if c.IsSet("start-with") {
		cfg.StartWith = c.Int("start-with")
	}
	if c.IsSet("period") {
		cfg.Period = c.Duration("period")
	}
	if c.IsSet("suspect") {
		cfg.Suspect = c.Duration("suspect")
	}
	if !cfg.Found {
		// Nobody answers after a while: there is no group yet, and the
		// lowest ID creates it (the next one a while later, and so on).
		rank := slices.Index(peers, self)
		cfg.FoundAfter = time.Duration(3*(rank+1)) * mcast.GroupConfig{Period: cfg.Period, Suspect: cfg.Suspect}.SuspectTime()
	}
	return cfg, nil
}
