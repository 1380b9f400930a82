package ticket

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/gossip"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Member is one process of a member as ticketd runs it (a node.Machine of
// Msg): one Machine at a time, the member's mark across them, and, on the
// member's first process, the member's PrCast (prcast.go).
//
// A process that left the core, or was excluded, never comes back (§4: it
// joins again as a new process), so a join after that starts a new
// Machine under the same ID; CJOIN attempts only grow per ID, which tells
// the incarnations apart.
//
// The member's mark (the highest epoch any of its Machines issued or
// heard of) outlives each Machine: a new one starts from it (Config.Floor)
// and sends it in every message, so a pool founded again, or a ticket
// reclaimed, starts above every epoch this member ever knew.
type Member struct {
	base     Config // Tickets set only until the pool is founded
	contacts func() []node.ID
	m        *Machine
	left     *Machine        // the last Machine, if it left the core by a CLEAVE: it still votes (onReqCoord)
	pc       *gossip.Machine // PrCast; nil on a member's other processes
	pcWake   time.Time
	group    []node.ID
	rf       refounding // the member's refounding, on its first process (refounding.go)
	ls       leasing    // its leases, under Config.Quorum (lease.go)
	lent     *Epoch     // the use under way: the ticket lent to a local command, and its epoch
	out      []node.Envelope[Msg]
	events   []node.Event
}

// NewMember returns a member's process: its first Machine from cfg
// (Tickets set: it founds the pool when it joins). contacts gives the
// processes a later join may ask (the member's address book). With
// prcast, it runs the member's PrCast; the group is the member alone
// until a MsgGroup says otherwise.
func NewMember(cfg Config, contacts func() []node.ID, prcast bool) (*Member, error) {
	h := &Member{base: cfg, contacts: contacts}
	if cfg.Tickets == 0 {
		cfg.Contacts = []node.ID{cfg.ID + 1} // replaced at the first join
	}
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	h.m = m
	if prcast {
		h.group = []node.ID{cfg.ID}
		g, err := gossip.New(gossip.Config{ID: cfg.ID, Peers: h.group,
			Rand: rand.New(rand.NewPCG(cfg.Rand.Uint64(), cfg.Rand.Uint64()))})
		if err != nil {
			return nil, err
		}
		h.pc = g
	}
	return h, nil
}

// Machine is the current Machine.
func (h *Member) Machine() *Machine { return h.m }

// Mark is the highest epoch this member's Machines issued or heard of.
func (h *Member) Mark() uint64 { return max(h.base.Floor, h.m.Floor()) }

// Learn raises the mark to floor (heard from another member).
func (h *Member) Learn(floor uint64) {
	h.base.Floor = max(h.base.Floor, floor)
	h.m.Learn(floor)
}

// next is the Config of the member's next Machine: the mark so far.
func (h *Member) next() Config {
	h.base.Floor = h.Mark()
	return h.base
}

// Join asks for a place in the core, with a new Machine if the last one
// is done. It reports false when there is nobody to ask.
func (h *Member) Join(now time.Time) bool {
	cs := h.contacts()
	if h.m.Done() || h.m.State() == "idle" && h.base.Tickets == 0 {
		if len(cs) == 0 {
			return false
		}
		cfg := h.next()
		cfg.Tickets, cfg.Contacts = 0, cs
		m, err := New(cfg)
		if err != nil {
			return false
		}
		// A voter's promise outlives its process: the last one may have
		// voted after it left (onReqCoord), and this one must not vouch
		// for what it banned, under the same ID.
		m.bans = slices.Clone(h.m.bans)
		// So does what it granted: a vouch of the last one may still
		// count, and this one reports it in its ACKCOORDs (waitFor).
		m.health.granted = h.m.health.granted
		// And the places it held: a vote of this one answers for them,
		// naming where their CLEAVEs went (speak.go).
		m.oldPlaces = h.m.olds(now)
		h.left = nil
		if h.m.st == stLeft {
			h.left = h.m
		}
		h.m = m
	}
	h.base.Tickets = 0 // the pool is founded once
	_ = h.m.Step(now, node.Envelope[Msg]{From: h.base.ID, To: h.base.ID, Msg: Msg{Type: MsgJoin}})
	return true
}

// Leave gives the ticket back (CLEAVE).
func (h *Member) Leave(now time.Time) {
	_ = h.m.Step(now, node.Envelope[Msg]{From: h.base.ID, To: h.base.ID, Msg: Msg{Type: MsgLeave}})
}

// Reset drops a join under way: the machine is replaced by an idle one,
// whose next CJOIN has a newer attempt, so that a late grant for the old
// one is ignored.
func (h *Member) Reset() {
	if h.m.State() != "joining" {
		return
	}
	cfg := h.next()
	cfg.Tickets, cfg.Contacts = 0, []node.ID{h.base.ID + 1}
	if m, err := New(cfg); err == nil {
		m.bans = h.m.bans
		m.oldPlaces = h.m.oldPlaces
		h.m = m
	}
}

// Found starts the pool again (a refound): a founder's machine for n
// tickets whose epochs start above floor, joined at once.
func (h *Member) Found(now time.Time, n uint32, floor uint64) error {
	cfg := h.next()
	cfg.Tickets, cfg.Floor, cfg.Contacts = int(n), max(cfg.Floor, floor), nil
	m, err := New(cfg)
	if err != nil {
		return err
	}
	h.m = m
	h.base.Tickets = 0
	return h.m.Step(now, node.Envelope[Msg]{From: h.base.ID, To: h.base.ID, Msg: Msg{Type: MsgJoin}})
}

// announce broadcasts a notice by PrCast and reports it as this member's
// own.
func (h *Member) announce(now time.Time, n Notice) {
	n.By, n.AtNS = uint32(MemberOf(h.base.ID)), now.UnixNano()
	body, _ := json.Marshal(n)
	req := node.Envelope[gossip.Msg]{From: h.base.ID, To: h.base.ID, Msg: gossip.Msg{Type: gossip.MsgBroadcast, Events: []gossip.Event{{Payload: body}}}}
	if err := h.pc.Step(now, req); err != nil {
		return
	}
	h.events = append(h.events, NoticeEvent{Notice: n, Own: true})
	h.drainPrCast()
}

// drainPrCast moves the PrCast's output to the Member's: its messages as
// MsgPrCast, other members' notices as NoticeEvents (By is the member the
// frame's sender is, what its frame vouches for). A pool founded again
// elsewhere ends this member's freeze: there is a pool to join.
func (h *Member) drainPrCast() {
	g := h.pc.Ready()
	for _, e := range g.Msgs {
		gm := e.Msg
		h.out = append(h.out, node.Envelope[Msg]{From: h.base.ID, To: e.To, Msg: Msg{Type: MsgPrCast, Gossip: &gm}})
	}
	for _, ev := range g.Events {
		if del, ok := ev.(gossip.DeliverEvent); ok && del.Origin != h.base.ID {
			if n, ok := decodeNotice(del.Payload); ok {
				n.By = uint32(MemberOf(del.Origin))
				if n.Event == "refounded" {
					h.rf.frozenUntil = time.Time{}
				}
				h.events = append(h.events, NoticeEvent{Notice: n})
			}
		}
	}
	h.pcWake = g.Wake
}

// Step implements node.Machine: PrCast's and refounding's messages and
// the member's local requests are the Member's, the rest go to the
// Machine.
func (h *Member) Step(now time.Time, in node.Envelope[Msg]) error {
	self := in.From == h.base.ID
	switch msg := in.Msg; {
	case msg.Type == MsgPrCast:
		if h.pc == nil || msg.Gossip == nil || self {
			return nil
		}
		err := h.pc.Step(now, node.Envelope[gossip.Msg]{From: in.From, To: h.base.ID, Msg: *msg.Gossip})
		h.drainPrCast()
		return err
	case msg.Type == MsgProbe || msg.Type == MsgProbeAnswer:
		if h.pc == nil || self {
			return nil
		}
		if msg.Type == MsgProbe {
			h.onProbe(now, in.From, msg)
		} else {
			h.onProbeAnswer(in.From, msg)
		}
		return nil
	case msg.Type == MsgLease || msg.Type == MsgLeaseGrant:
		if !h.quorum() || self {
			return nil
		}
		if msg.Type == MsgLease {
			h.onLease(now, in.From, msg)
		} else {
			h.onLeaseGrant(now, in.From, msg)
		}
		return nil
	case msg.Type == MsgJoin && self:
		// A join, with a new Machine if the last one is done; none while
		// a refound is being decided (refounding.go).
		if !h.Frozen(now) && !h.Join(now) {
			h.events = append(h.events, NoContactEvent{})
		}
		return nil
	case msg.Type == MsgLeave && self:
		h.Leave(now)
		return nil
	case msg.Type == MsgLearn && self:
		h.Learn(msg.Floor)
		return nil
	case msg.Type == MsgReset && self:
		h.Reset()
		return nil
	case msg.Type == MsgLeased && self:
		h.leased(msg.Attempt)
		return nil
	case msg.Type == MsgAdmit && self:
		h.admit(msg.Attempt)
		return nil
	case msg.Type == MsgLend && self:
		h.lend(now)
		return nil
	case msg.Type == MsgReturn && self:
		if h.lent != nil {
			h.events = append(h.events, ReturnedEvent{Ticket: h.lent.Ticket, Epoch: h.lent.Epoch})
			h.lent = nil
		}
		return nil
	case msg.Type == MsgLocal && self:
		if msg.Local != nil {
			h.rf.local = *msg.Local
		}
		return nil
	case msg.Type == MsgAnnounce && self:
		if h.pc != nil && msg.Notice != nil {
			h.announce(now, *msg.Notice)
		}
		return nil
	case msg.Type == MsgGroup && self:
		if h.pc == nil {
			return nil
		}
		g := append([]node.ID{h.base.ID}, msg.Group...)
		slices.Sort(g)
		g = slices.Compact(g)
		if !slices.Equal(g, h.group) {
			h.group = g
			h.pc.SetPeers(g)
		}
		return nil
	}
	if in.Msg.Type == MsgReqCoord && h.left != nil && !h.m.inRing() {
		// Our last process left the core and this one is not in it yet:
		// the left one votes for its place (an exclusion whose candidate
		// still holds an L that names it needs it), and this one keeps
		// the promise, under the same ID.
		err := h.left.Step(now, in)
		r := h.left.Ready()
		h.out = append(h.out, r.Msgs...)
		h.m.bans = slices.Clone(h.left.bans)
		return err
	}
	if in.Msg.Type == MsgCJoin && !h.Leased(now) {
		return nil // no place handed out without a lease (lease.go)
	}
	if in.Msg.Type == MsgCJoin && now.Before(h.ls.admitFrom) && MemberOf(in.From) != MemberOf(h.base.ID) && h.base.bug != bugJoinWhileTaken {
		// A founder under Config.Quorum: while the promises it founded
		// under last, another member's process could get no lease from
		// the promisers, and would leave the core again after
		// leaseGrace, abruptly, with the founder's support in a core of
		// two (doc.go, "After a refound: liveness").
		return nil
	}
	return h.m.Step(now, in)
}

// Tick implements node.Machine.
func (h *Member) Tick(now time.Time) {
	h.m.Tick(now)
	if h.pc == nil && h.base.Quorum {
		h.checkLease(now) // the first process's lease, as told (MsgLeased)
	}
	if h.pc != nil {
		h.pc.Tick(now)
		h.drainPrCast()
		h.tickRefound(now)
		h.tickLease(now)
	}
}

// Ready implements node.Machine: the Machine's output and the Member's
// own (PrCast, refounding).
func (h *Member) Ready() node.Ready[Msg] {
	r := h.m.Ready()
	r.Msgs = append(h.out, r.Msgs...)
	r.Events = append(h.events, r.Events...)
	h.out, h.events = nil, nil
	if h.pc == nil {
		return r
	}
	for _, w := range []time.Time{h.pcWake, h.refoundWake(), h.leaseWake()} {
		if !w.IsZero() && (r.Wake.IsZero() || w.Before(r.Wake)) {
			r.Wake = w
		}
	}
	return r
}

// Status describes the current Machine for status queries.
func (h *Member) Status() any { return h.m.Status() }

// lend starts a new use of the owned ticket for a local command: one use
// at a time, each under a new epoch (Machine.Lend), only while the
// process may act. The epoch is reported (LentEvent) before the command
// may start, so that whoever watches the events sees every epoch a
// command gets.
func (h *Member) lend(now time.Time) {
	if h.lent != nil {
		h.events = append(h.events, LendRefusedEvent{Why: "lent already"})
		return
	}
	if !h.Leased(now) {
		h.events = append(h.events, LendRefusedEvent{Why: "no lease from a majority of the members" + h.leaseSummary(now)})
		return
	}
	if h.base.Quorum && !outState(h.m.st) {
		h.ls.held = true // it leaves the core once this lease ends (checkLease)
	}
	e, ok := h.m.Lend(now)
	if !ok {
		why := "may not act: it is " + h.m.State()
		if h.m.st == stCoordinator {
			why = "may not act: its support ran out (no ALIVEs from its predecessors)"
		}
		h.events = append(h.events, LendRefusedEvent{Why: why})
		return
	}
	t, _, _ := h.m.Ticket()
	h.lent = &Epoch{Ticket: t, Epoch: e}
	until := h.m.SupportedUntil()
	if l := h.LeaseUntil(); !l.IsZero() && (until.IsZero() || l.Before(until)) {
		until = l
	}
	h.events = append(h.events, LentEvent{Ticket: t, Epoch: e, N: h.m.N(), Until: until})
}

// Lent is the use under way, if any.
func (h *Member) Lent() (Epoch, bool) {
	if h.lent == nil {
		return Epoch{}, false
	}
	return *h.lent, true
}

// LentEvent: the owned ticket is lent to a local command under Epoch, a
// fencing number no use of Ticket had before. Until is how long the
// process's support is known to last (zero: alone, no support needed).
type LentEvent struct {
	Ticket uint32
	Epoch  uint64
	N      uint32
	Until  time.Time
}

func (LentEvent) Kind() string { return "lent" }
func (e LentEvent) String() string {
	return fmt.Sprintf("lent %d epoch %d of %d", e.Ticket, e.Epoch, e.N)
}

// LendRefusedEvent: a MsgLend found nothing to lend (the process may not
// act, or its ticket is lent already).
type LendRefusedEvent struct{ Why string }

func (LendRefusedEvent) Kind() string     { return "lend-refused" }
func (e LendRefusedEvent) String() string { return "lend refused: " + e.Why }

// ReturnedEvent: the command that had Ticket under Epoch is done.
type ReturnedEvent struct {
	Ticket uint32
	Epoch  uint64
}

func (ReturnedEvent) Kind() string { return "returned" }
func (e ReturnedEvent) String() string {
	return fmt.Sprintf("returned %d epoch %d", e.Ticket, e.Epoch)
}
