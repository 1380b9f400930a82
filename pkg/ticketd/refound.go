package ticketd

import (
	"context"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/ticket"
)

// Founding the pool again is the member's first process's
// (ticket.Member, pkg/ticket's refounding.go has the rule and the argument
// that it cannot make two pools): its probes and answers are ticket
// messages between the members' first processes. The daemon tells it what
// it cannot see (ticket.Local: the other slots, the clients, the book's
// size and the members the core excluded lately), carries out what it
// asks of the other slots (FreezeEvent, LearnEvent), keeps the mark in
// the state file, and logs.

// probeExcluded: a member struck off because the core excluded it is
// probed too for this long (ticket.AddressBook.Excluded); a live one is
// back in the books within a gossip round or two.
const probeExcluded = time.Minute

// local is what slot 0's refounding needs to know of the rest of the
// member.
func (d *daemon) local(now time.Time) ticket.Local {
	l := ticket.Local{Stopping: d.stopping, Durable: d.cfg.StateFile != "", Floor: d.cfg.Floor, N: d.bk.size(),
		Excluded: d.bk.excluded(now, probeExcluded)}
	for i, s := range d.slots {
		if s.holder != nil {
			l.Busy = true
		}
		if i == 0 {
			continue
		}
		switch {
		case s.mc.state == "joining":
			l.Joining = true
		case !out(s.mc.state):
			l.Busy = true
		}
		l.Floor = max(l.Floor, s.mc.mark)
	}
	return l
}

// tellLocal hands slot 0 the member's state (each tick).
func (d *daemon) tellLocal(now time.Time) {
	l := d.local(now)
	_ = d.slots[0].drv.Request(context.Background(), ticket.Msg{Type: ticket.MsgLocal, Local: &l})
}

// learn raises every other slot's mark to floor (heard from another
// member), and keeps it in the state file.
func (d *daemon) learn(floor uint64) {
	for _, s := range d.slots[1:] {
		d.tell(s, ticket.Msg{Type: ticket.MsgLearn, Floor: floor})
	}
	d.keep(floor)
}

// keep writes the state file when the mark passed what it holds (with
// the reserve, as a lend does).
func (d *daemon) keep(floor uint64) {
	if d.cfg.StateFile == "" || floor <= d.persist {
		return
	}
	d.persist = floor + epochReserve
	if err := cli.WriteUint(d.cfg.StateFile, d.persist); err != nil {
		d.mb.Log.Warn("cannot persist the epoch", "err", err)
	}
}

// freeze drops the other slots' joins under way (slot 0's own was dropped
// by its Member); no more start while slot 0 says it is frozen.
func (d *daemon) freeze() {
	for i, s := range d.slots {
		if s.mc.state == "joining" {
			if i > 0 {
				d.tell(s, ticket.Msg{Type: ticket.MsgReset})
			}
			s.mc.state, s.joining = "idle", time.Time{}
		}
	}
}

func (d *daemon) frozen() bool { return d.slots[0].mc.frozen }

// refoundEvent handles slot 0's refounding events; it reports false for
// any other event.
func (d *daemon) refoundEvent(ev node.Event) bool {
	switch e := ev.(type) {
	case ticket.FreezeEvent:
		d.freeze()
	case ticket.LearnEvent:
		d.learn(e.Floor)
	case ticket.ProbeEvent:
		d.mb.Log.Info("no process of the pool is in the core here: asking every member", "members", e.Members)
	case ticket.BlockedEvent:
		switch {
		case len(e.Blocking) > 0 && !e.Lower:
			d.mb.Log.Warn("cannot found the pool again: "+e.Why, "blocking", e.Blocking)
		default:
			d.mb.Log.Info("not founding the pool again: "+e.Why, "members", e.Blocking)
		}
	case ticket.RefoundedEvent:
		d.keep(e.Floor + 1)
		d.look(d.slots[0])
		d.mb.Log.Warn("the pool had ended (no process of it in the core, a majority of the members agrees): founded it again", "tickets", e.N, "members", e.Members, "floor", e.Floor)
		d.serve()
	default:
		return false
	}
	return true
}
