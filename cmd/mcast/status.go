package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

var statusFlags = cli.WithEnv(tool, append(cli.ClientFlags(),
	&ucli.DurationFlag{Name: "wait", Value: time.Second, Usage: "how long to wait for answers"},
	&ucli.StringFlag{Name: cli.FlagTransport, Value: "udp", Usage: "udp or tcp"},
))

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

// statusLine is one member's 'mcast status --json' line.
type statusLine struct {
	Event  string  `json:"event"` // "status"
	Member node.ID `json:"member"`
	Addr   string  `json:"addr"`
	mcast.GroupStatus
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
	ids := slices.Sorted(func(yield func(node.ID) bool) {
		for id := range replies {
			if !yield(id) {
				return
			}
		}
	})
	views := map[uint64]bool{}
	for _, id := range ids {
		r := replies[id]
		var st mcast.GroupStatus
		if err := json.Unmarshal(r.Status, &st); err != nil || st.ID != id {
			return cli.Exitf(cli.ExitUsage, "member %d does not run a dynamic group (mcast run --views)", id)
		}
		views[st.View] = true
		if c.Bool(cli.FlagJSON) {
			cm.Out.JSON(statusLine{Event: "status", Member: id, Addr: r.Addr, GroupStatus: st})
			continue
		}
		cm.Out.Line(statusText(st))
	}
	for _, id := range cli.IDs(cm.Peers) {
		if _, ok := replies[id]; !ok && !c.Bool(cli.FlagJSON) {
			cm.Out.Line(fmt.Sprintf("member %d silent", id))
		}
	}
	if len(views) > 1 {
		return &cli.ExitError{Code: cli.ExitBusy}
	}
	return nil
}

// statusText: 'member 2 view 7 leader 1 members 1,2,3 sequencer flushing
// false received 10,4,7 aru 10,4,7 delivered 10,4,7 sent 4 queue 0
// unacked 0'.
func statusText(st mcast.GroupStatus) string {
	list := func(v []uint64) string {
		if len(v) == 0 {
			return "-"
		}
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ",")
	}
	ids := make([]uint64, len(st.Members))
	for i, m := range st.Members {
		ids[i] = uint64(m.ID)
	}
	if !st.InView {
		return fmt.Sprintf("member %d joining (last view %d) sent %d queue %d", st.ID, st.View, st.Sent, st.Queue)
	}
	order := st.Order
	if st.Safe {
		order += " safe"
	}
	if st.Order == "totem" {
		order += fmt.Sprintf(" token %d", st.Token)
		if st.Holding {
			order += " holding"
		}
	}
	line := fmt.Sprintf("member %d view %d leader %d members %s %s flushing %v received %s aru %s delivered %s sent %d queue %d unacked %d",
		st.ID, st.View, st.Leader, list(ids), order, st.Flushing, list(st.Received), list(st.Aru), list(st.Delivered), st.Sent, st.Queue, st.Unacked)
	if st.Minority {
		line += " minority"
	}
	return line
}
