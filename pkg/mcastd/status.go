package mcastd

import (
	"encoding/json"
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"slices"
	"strings"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// StatusLine is one member's 'mcast status --json' line.
type StatusLine struct {
	Event  string  `json:"event"` // "status"
	Member node.ID `json:"member"`
	Addr   string  `json:"addr"`
	group.Status
}

// Status prints what each member that answered says of its group, in ID
// order: one line each (StatusText, or a StatusLine with JSON output),
// then, in text, 'member N silent' for each of peers that did not. A reply
// that is not a dynamic group's is exit 64; members in more than one view
// exit 75.
func Status(out *cli.Output, peers []node.ID, replies map[node.ID]driver.StatusReply) error {
	views := map[uint64]bool{}
	for _, id := range slices.Sorted(func(yield func(node.ID) bool) {
		for id := range replies {
			if !yield(id) {
				return
			}
		}
	}) {
		r := replies[id]
		var st group.Status
		if err := json.Unmarshal(r.Status, &st); err != nil || st.ID != id {
			return cli.Exitf(cli.ExitUsage, "member %d does not run a dynamic group (mcast run --views)", id)
		}
		views[st.View] = true
		if out.IsJSON() {
			out.JSON(StatusLine{Event: "status", Member: id, Addr: r.Addr, Status: st})
			continue
		}
		out.Line(StatusText(st))
	}
	for _, id := range peers {
		if _, ok := replies[id]; !ok && !out.IsJSON() {
			out.Line(fmt.Sprintf("member %d silent", id))
		}
	}
	if len(views) > 1 {
		return &cli.ExitError{Code: cli.ExitBusy}
	}
	return nil
}

// StatusText: 'member 2 view 7 leader 1 members 1,2,3 sequencer flushing
// false received 10,4,7 aru 10,4,7 delivered 10,4,7 sent 4 queue 0
// unacked 0'.
func StatusText(st group.Status) string {
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
		wait := ""
		if st.Leader != 0 {
			// The leader takes in only joiners it hears directly.
			wait = fmt.Sprintf(" waiting for leader %d (named by %d)", st.Leader, st.JoinVia)
		}
		return fmt.Sprintf("member %d joining (last view %d)%s sent %d queue %d", st.ID, st.View, wait, st.Sent, st.Queue)
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
