package ticket

import "time"

// HandBack decides, for one member that runs several processes of the
// core (slots: one per ticket it holds at once, up to n), which local
// client gets a ticket a slot holds, when a slot is asked to lend it,
// when a slot joins the core for a waiting client, and when a ticket goes
// back (CLEAVE, §4.2) so that another member can take it. It is pure:
// time comes from each call's now, and what it decides comes out of
// Ready as Actions for the service to carry out (a slot's Member lends,
// returns, leaves or joins; a client is handed a ticket or told "busy").
//
// The rule that keeps every member served: a member that hears that
// another waits for a ticket gives one back from an idle slot that has
// been used (or from any idle slot when no client of its own waits) and,
// when every slot is in use, marks the slot lent longest to leave at the
// end of its current use, even while clients of its own wait. A member
// whose clients keep re-granting would otherwise never have an idle slot
// at a tick (a released ticket goes to the next client at once), and the
// member that asked would starve (TestHandBackNoStarvation).
type HandBack struct {
	cfg     HandBackConfig
	slots   []hbSlot
	queue   []hbClient // waiting, oldest first
	wanted  time.Time  // another member said it waits for a ticket, until then
	others  time.Time  // another member last said it waits
	eager   time.Time  // slot 0 joins without a client of its own from then on
	askSent time.Time
	askNext int
	stop    bool
	out     []Action

	idleOnly bool // tests: the old rule, a ticket goes back only from an idle slot
}

// HandBackConfig is HandBack's timing, from the member's round.
type HandBackConfig struct {
	Round time.Duration
	// MaxSlots bounds the member's slots (with the pool's size, SetSize).
	MaxSlots int
	// HoldSlice: a member with one ticket in the core gives it to a member
	// that asks only once it has held it this long.
	HoldSlice time.Duration
	// EagerPause: a member that gave a ticket away, or heard that another
	// waits, joins without a client of its own only this much later.
	EagerPause time.Duration
	// IdleSlot: a slot other than the member's own gives its ticket back
	// after this long without a holder.
	IdleSlot time.Duration
	// AskEvery: a member whose clients wait asks one other member every
	// this many rounds to give a ticket back.
	AskEvery int
	// Busy: a nonblocking client is answered "busy" after this long.
	Busy time.Duration
}

// SlotView is what HandBack needs of a slot's Machine, as the service last
// looked at it.
type SlotView struct {
	State   string // Machine.State
	MayAct  bool
	Alone   bool
	Settled bool // may give its ticket back without disturbing a repair
	Frozen  bool // slot 0: a refound is being decided
}

type hbSlot struct {
	v         SlotView
	holder    uint64 // client holding its ticket (0: none)
	lends     int    // lends since it took its ticket
	lending   bool   // asked to lend, no answer yet
	yield     bool   // leave when the current use ends
	takenAt   time.Time
	idleSince time.Time
	joining   time.Time
}

type hbClient struct {
	id       uint64
	nonblock bool
	busyAt   time.Time
}

// ActionKind is what an Action asks of the service.
type ActionKind uint8

const (
	ActLend   ActionKind = iota + 1 // ask slot Slot's Member to lend its ticket (MsgLend)
	ActReturn                       // the use of slot Slot's ticket is over (MsgReturn)
	ActLeave                        // slot Slot gives its ticket back (MsgLeave)
	ActJoin                         // slot Slot joins the core (Slot == Slots(): open it first)
	ActReset                        // slot Slot drops its join (MsgReset), unless Quiet
	ActHand                         // hand slot Slot's lent ticket to Client
	ActBusy                         // tell nonblocking Client that nothing is free
	ActAsk                          // ask another member, the Turn-th in turn, to give a ticket back
)

// Action is one decision of HandBack.
type Action struct {
	Kind   ActionKind
	Slot   int
	Client uint64
	Turn   int
	Quiet  bool // ActReset: the slot's Member dropped the join itself
}

// NewHandBack returns the scheduling of a member whose own slot is slot 0.
func NewHandBack(cfg HandBackConfig) *HandBack {
	return &HandBack{cfg: cfg, slots: []hbSlot{{v: SlotView{State: "idle"}}}}
}

// Ready returns the actions decided since the last call.
func (h *HandBack) Ready() []Action {
	a := h.out
	h.out = nil
	return a
}

// Slots is how many slots the member has.
func (h *HandBack) Slots() int { return len(h.slots) }

// Holder is the client holding slot i's ticket (0: none).
func (h *HandBack) Holder(i int) uint64 { return h.slots[i].holder }

// Lends is how many times slot i lent its ticket since it took it.
func (h *HandBack) Lends(i int) int { return h.slots[i].lends }

// Waiting is how many clients wait.
func (h *HandBack) Waiting() int { return len(h.queue) }

// View records what slot i's Machine looks like now.
func (h *HandBack) View(i int, v SlotView) { h.slots[i].v = v }

// Abandon drops the last slot, which ActJoin asked to open and could not be.
func (h *HandBack) Abandon(i int) {
	if i == len(h.slots)-1 && i > 0 {
		h.slots = h.slots[:i]
	}
}

func (h *HandBack) do(a Action) { h.out = append(h.out, a) }

// Want queues client c for a ticket.
func (h *HandBack) Want(c uint64, nonblock bool, now time.Time) {
	if h.stop {
		return
	}
	h.queue = append(h.queue, hbClient{id: c, nonblock: nonblock, busyAt: now.Add(h.cfg.Busy)})
	h.serve()
}

// Release: client c is done (released its ticket, or went away).
func (h *HandBack) Release(c uint64, now time.Time) {
	for i, q := range h.queue {
		if q.id == c {
			h.queue = append(h.queue[:i], h.queue[i+1:]...)
			break
		}
	}
	for i := range h.slots {
		s := &h.slots[i]
		if s.holder != c {
			continue
		}
		s.holder, s.idleSince = 0, now
		h.do(Action{Kind: ActReturn, Slot: i})
		h.yieldNow(i, now)
		h.serve()
		return
	}
}

// Lent: slot i's Member lent its ticket (LentEvent). It goes to the
// oldest waiting client, or back at once if nobody waits any more.
func (h *HandBack) Lent(i int) {
	s := &h.slots[i]
	s.lending = false
	if len(h.queue) == 0 || h.stop || s.holder != 0 {
		h.do(Action{Kind: ActReturn, Slot: i})
		return
	}
	c := h.queue[0]
	h.queue = h.queue[1:]
	s.holder = c.id
	s.lends++
	h.do(Action{Kind: ActHand, Slot: i, Client: c.id})
}

// Refused: slot i's Member had nothing to lend (LendRefusedEvent).
func (h *HandBack) Refused(i int) { h.slots[i].lending = false }

// Taken: slot i took a ticket (TakenEvent).
func (h *HandBack) Taken(i int, now time.Time) {
	s := &h.slots[i]
	s.joining, s.lends, s.idleSince, s.takenAt, s.yield = time.Time{}, 0, now, now, false
	s.v.State = "coordinator"
	h.serve()
}

// Wanted: another member says it waits for a ticket.
func (h *HandBack) Wanted(now time.Time) {
	h.others, h.wanted = now, now.Add(h.cfg.Round)
}

// Stop: the member is stopping; it lends nothing more. It returns the
// clients that waited (they are told the member is stopping).
func (h *HandBack) Stop() []uint64 {
	h.stop = true
	var ids []uint64
	for _, c := range h.queue {
		ids = append(ids, c.id)
	}
	h.queue = nil
	return ids
}

// Freeze: slot 0 decides a refound; every join under way is dropped
// (slot 0's by its Member itself).
func (h *HandBack) Freeze() {
	for i := range h.slots {
		if s := &h.slots[i]; s.v.State == "joining" {
			h.do(Action{Kind: ActReset, Slot: i, Quiet: i == 0})
			s.v.State, s.joining = "idle", time.Time{}
		}
	}
}

// serve asks free slots to lend, as many as clients wait. Only slots in
// the core (coordinators: they own a ticket) are asked: a slot out of it
// refuses, and asking it in turn would use up the asks while a slot that
// owns a ticket waits behind it (TestHandBackNoStarvation found a member
// with four slots that had left and one coordinator never lend again).
func (h *HandBack) serve() {
	want := len(h.queue)
	for _, s := range h.slots {
		if s.lending {
			want--
		}
	}
	for i := range h.slots {
		if want <= 0 || h.stop {
			return
		}
		if s := &h.slots[i]; s.holder == 0 && !s.lending && !s.yield && s.v.State == "coordinator" {
			s.lending = true
			want--
			h.do(Action{Kind: ActLend, Slot: i})
		}
	}
}

// yieldNow gives slot i's ticket back at the end of a use, if Tick asked
// it to and it may leave without disturbing a repair.
func (h *HandBack) yieldNow(i int, now time.Time) {
	s := &h.slots[i]
	if !s.yield {
		return
	}
	s.yield = false
	if v := s.v; v.MayAct && !v.Alone && v.Settled && !h.frozen() {
		h.do(Action{Kind: ActLeave, Slot: i})
		h.eager = now.Add(h.cfg.EagerPause)
	}
}

func (h *HandBack) frozen() bool { return h.slots[0].v.Frozen }

func outOfCore(state string) bool {
	return state == "idle" || state == "left" || state == "excluded"
}

// Tick answers impatient clients, asks free slots to lend, gives tickets
// back when another member waits or a slot idles, and brings slots into
// the core while clients wait. size is the pool's number of tickets.
func (h *HandBack) Tick(now time.Time, size int) {
	q := h.queue[:0]
	for _, c := range h.queue {
		if c.nonblock && now.After(c.busyAt) {
			h.do(Action{Kind: ActBusy, Client: c.id})
			continue
		}
		q = append(q, c)
	}
	h.queue = q
	if h.stop {
		return
	}
	h.serve()
	if h.frozen() {
		return // a refound is being decided: no joins, nor tickets given back, meanwhile
	}
	inCore := 0
	for _, s := range h.slots {
		if st := s.v.State; st == "coordinator" || st == "linking" {
			inCore++
		}
	}
	// Another member waits and no ticket is free: give one back from an
	// idle slot that has been used (any idle one when no client waits
	// here).
	if now.Before(h.wanted) {
		for i, s := range h.slots {
			if v := s.v; s.holder == 0 && !s.lending && v.MayAct && !v.Alone && v.Settled && (len(h.queue) == 0 || s.lends > 0) {
				h.do(Action{Kind: ActLeave, Slot: i})
				h.wanted = time.Time{}
				h.eager = now.Add(h.cfg.EagerPause)
				break
			}
		}
	}
	// Still wanted, and every ticket here is in use: the one lent longest
	// leaves when its current use ends (yieldNow), so that a member busy
	// with clients of its own cannot starve another. A member with one
	// ticket gives it up only after holding it for HoldSlice, so that
	// tickets do not move at every ask while members have one each.
	if now.Before(h.wanted) && !h.idleOnly {
		pick := -1
		for i, s := range h.slots {
			if v := s.v; s.holder != 0 && !s.yield && s.lends > 0 && v.MayAct && !v.Alone &&
				(inCore > 1 || now.Sub(s.takenAt) > h.cfg.HoldSlice) && (pick < 0 || s.takenAt.Before(h.slots[pick].takenAt)) {
				pick = i
			}
		}
		if pick >= 0 {
			h.slots[pick].yield = true
			h.wanted = time.Time{}
		}
	}
	// A slot beyond the member's own idle a while gives its ticket back,
	// so that tickets do not pile up on the busiest host.
	if len(h.queue) == 0 {
		for i := 1; i < len(h.slots); i++ {
			if s := h.slots[i]; s.holder == 0 && !s.lending && s.v.MayAct && !s.v.Alone && s.v.Settled && now.Sub(s.idleSince) > h.cfg.IdleSlot {
				h.do(Action{Kind: ActLeave, Slot: i})
				break
			}
		}
	}
	// Clients wait: bring as many slots into the core as they need.
	coming := 0
	for _, s := range h.slots {
		if st := s.v.State; st == "joining" || st == "linking" {
			coming++
		}
	}
	// While other members say they wait, a member that has a ticket
	// brings no more slots in (nor keeps them trying): a ticket given
	// back is for the member that asked for it.
	if inCore > 0 && now.Sub(h.others) < h.cfg.EagerPause {
		for i := range h.slots {
			if s := &h.slots[i]; s.v.State == "joining" {
				h.do(Action{Kind: ActReset, Slot: i})
				s.v.State, s.joining = "idle", time.Time{}
			}
		}
		coming = len(h.queue)
	}
	for need := len(h.queue) - coming; need > 0; need-- {
		i := h.outSlot(size)
		if i < 0 {
			break
		}
		h.do(Action{Kind: ActJoin, Slot: i})
		h.slots[i].joining, h.slots[i].v.State = now, "joining"
	}
	// Idle and out of the core: the member's own slot joins anyway (§4: a
	// core over more members survives more failures). A member that gave
	// a ticket away waits a while first, and none joins this way while
	// others say they wait.
	if s0 := &h.slots[0]; len(h.queue) == 0 && outOfCore(s0.v.State) && now.After(h.eager) && now.Sub(h.wanted) > h.cfg.EagerPause {
		h.do(Action{Kind: ActJoin, Slot: 0})
		h.eager = now.Add(h.cfg.EagerPause)
	}
	// Still waiting after two rounds of joining: ask one other member a
	// round, in turn, to give a ticket back.
	if len(h.queue) > 0 && now.Sub(h.askSent) > time.Duration(h.cfg.AskEvery)*h.cfg.Round {
		for _, s := range h.slots {
			if s.v.State == "joining" && now.Sub(s.joining) > 2*h.cfg.Round {
				h.askSent = now
				h.askNext++
				h.do(Action{Kind: ActAsk, Turn: h.askNext})
				break
			}
		}
	}
}

// outSlot is a slot out of the core to bring in: an existing one, or a
// new one (its index is the old Slots()) while the member has fewer
// slots than the pool has tickets; -1 when there is none.
func (h *HandBack) outSlot(size int) int {
	for i, s := range h.slots {
		if outOfCore(s.v.State) {
			return i
		}
	}
	if len(h.slots) >= min(size, h.cfg.MaxSlots) {
		return -1
	}
	h.slots = append(h.slots, hbSlot{v: SlotView{State: "idle"}})
	return len(h.slots) - 1
}

// Refounded: slot 0 founded the pool again and owns the tickets; waiting
// clients are served from it.
func (h *HandBack) Refounded() { h.serve() }
