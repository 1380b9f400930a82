package ticketd

import (
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/ticket"
)

// host is the member's node.Machine: one ticket.Machine at a time. A
// process that left the core, or was excluded, never comes back (§4: it
// joins again as a new process), so a join after that starts a new
// Machine under the same ID; CJOIN attempts only grow per ID, which tells
// the incarnations apart.
//
// The member's mark (the highest epoch any of its Machines issued or
// heard of) outlives each Machine: a new one starts from it (Config.Floor)
// and sends it in every message, so a pool founded again, or a ticket
// reclaimed, starts above every epoch this member ever knew.
type host struct {
	base     ticket.Config // Tickets set only until the pool is founded
	contacts func() []node.ID
	m        *ticket.Machine
}

// mark is the highest epoch this member's Machines issued or heard of.
func (h *host) mark() uint64 { return max(h.base.Floor, h.m.Floor()) }

// learn raises the mark to floor (heard from another member).
func (h *host) learn(floor uint64) {
	h.base.Floor = max(h.base.Floor, floor)
	h.m.Learn(floor)
}

// next is the Config of the member's next Machine: the mark so far.
func (h *host) next() ticket.Config {
	h.base.Floor = h.mark()
	return h.base
}

func newHost(cfg ticket.Config, contacts func() []node.ID) (*host, error) {
	h := &host{base: cfg, contacts: contacts}
	if cfg.Tickets == 0 {
		cfg.Contacts = []node.ID{cfg.ID + 1} // replaced at the first join
	}
	m, err := ticket.New(cfg)
	if err != nil {
		return nil, err
	}
	h.m = m
	return h, nil
}

// join asks for a place in the core, with a new Machine if the last one
// is done. It reports false when there is nobody to ask.
func (h *host) join(now time.Time) bool {
	cs := h.contacts()
	if h.m.Done() || h.m.State() == "idle" && h.base.Tickets == 0 {
		if len(cs) == 0 {
			return false
		}
		cfg := h.next()
		cfg.Tickets, cfg.Contacts = 0, cs
		m, err := ticket.New(cfg)
		if err != nil {
			return false
		}
		h.m = m
	}
	h.base.Tickets = 0 // the pool is founded once
	_ = h.m.Step(now, node.Envelope[ticket.Msg]{From: h.base.ID, To: h.base.ID, Msg: ticket.Msg{Type: ticket.MsgJoin}})
	return true
}

// leave gives the ticket back (CLEAVE).
func (h *host) leave(now time.Time) {
	_ = h.m.Step(now, node.Envelope[ticket.Msg]{From: h.base.ID, To: h.base.ID, Msg: ticket.Msg{Type: ticket.MsgLeave}})
}

func (h *host) Step(now time.Time, in node.Envelope[ticket.Msg]) error { return h.m.Step(now, in) }
func (h *host) Tick(now time.Time)                                     { h.m.Tick(now) }
func (h *host) Ready() node.Ready[ticket.Msg]                          { return h.m.Ready() }
func (h *host) Status() any                                            { return h.m.Status() }

// reset drops a join under way: the machine is replaced by an idle one,
// whose next CJOIN has a newer attempt, so that a late grant for the old
// one is ignored.
func (h *host) reset() {
	if h.m.State() != "joining" {
		return
	}
	cfg := h.next()
	cfg.Tickets, cfg.Contacts = 0, []node.ID{h.base.ID + 1}
	if m, err := ticket.New(cfg); err == nil {
		h.m = m
	}
}

// found starts the pool again (refound.go): a founder's machine for n
// tickets whose epochs start above floor, joined at once.
func (h *host) found(now time.Time, n uint32, floor uint64) error {
	cfg := h.next()
	cfg.Tickets, cfg.Floor, cfg.Contacts = int(n), max(cfg.Floor, floor), nil
	m, err := ticket.New(cfg)
	if err != nil {
		return err
	}
	h.m = m
	h.base.Tickets = 0
	return h.m.Step(now, node.Envelope[ticket.Msg]{From: h.base.ID, To: h.base.ID, Msg: ticket.Msg{Type: ticket.MsgJoin}})
}
