package ticketd

import (
	"context"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/ticket"
)

// PrCast (Gidenstam et al. §2) runs in the member's first process (ticket.Member):
// its gossip is stepped with the driver's now, and its frames go out as
// ticket messages, authenticated like the rest. The daemon hands it the
// notices to announce and the group (the members in the book), and shows
// what it delivers to the local watchers (`ticketd watch`).

// Notice is one PrCast event (ticket.Notice).
type Notice = ticket.Notice

type prcast struct {
	group    []node.ID
	watchers map[*session]bool
}

// announce broadcasts a notice; the member's first process stamps it and
// shows it to local watchers (a ticket.NoticeEvent).
func (d *daemon) announce(n Notice) {
	_ = d.slots[0].drv.Request(context.Background(), ticket.Msg{Type: ticket.MsgAnnounce, Notice: &n})
}

// prcastGroup gives the PrCast the members the book knows as the group,
// when it changed.
func (d *daemon) prcastGroup() {
	var ids []node.ID
	for _, id := range d.bk.others() {
		if id <= MaxMemberID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if ids == nil {
		ids = []node.ID{}
	}
	if slices.Equal(ids, d.pc.group) && d.pc.group != nil {
		return
	}
	d.pc.group = ids
	_ = d.slots[0].drv.Request(context.Background(), ticket.Msg{Type: ticket.MsgGroup, Group: ids})
}

// notice shows a delivered notice (this member's or another's) to the
// local watchers.
func (d *daemon) notice(e ticket.NoticeEvent) {
	d.watchersSee(e.Notice)
}

func (d *daemon) watchersSee(n Notice) {
	for s := range d.pc.watchers {
		s.cn.Send(n)
	}
}
