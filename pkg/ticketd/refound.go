package ticketd

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/ticket"
)

// Founding the pool again.
//
// The core can end while every member is alive: all of its processes
// left at once (each gives its ticket back when another member waits, and
// §3's leaving processes hand their ranges on until the last one ends the
// pool), or all lost their support together (a host stalled longer than
// the support window, beyond §4's fault model of at most k failures among
// 2k+1 neighbours). The seed has nothing to say about it: its pool is then
// gone. Here the members find that out and one of them founds the pool
// again, under a rule that cannot make two pools:
//
//   - A member whose slots have all been out of the core for refoundAfter,
//     one of them trying to join all along, sends a probe to every member
//     in its book.
//   - A member that answers "out" to a higher member's probe is stuck too
//     (only a lower member can found, and the higher one's probes keep it
//     frozen, so it would never be joining): it sends its own probe
//     probeWindow later.
//   - A member answers "out" only when none of its slots is in the core or
//     on its way in with a place granted (linking), and none has a client
//     left (every command it lent a ticket to has ended). Answering "out"
//     freezes it for freezeFor: it drops the joins under way and starts
//     none, so that it stays out while the prober counts; if the prober's
//     ID is lower than its own, it founds nothing itself meanwhile.
//   - The prober founds the pool when, within probeWindow of sending, every
//     member it asked answered "out", nobody named a member it did not ask
//     (a book that missed somebody cannot decide), it is still out itself,
//     it keeps a state file, and its ID is the lowest of those that keep
//     one (ticket.DecideRefound). Its tickets' epochs start
//     ticket.RefoundJump above the highest mark anyone reported (pkg/ticket
//     doc.go, "Fencing across refounds"); probes and answers carry the
//     marks both ways, and every member raises its own to them.
//   - A member without a state file never founds: restarted, it would not
//     know whether the pool's epochs had gone past its own.
//   - Members the core excluded are struck off the book (they are not
//     asked, so a dead one does not stop the refound for good), but for
//     probeExcluded after their exclusion they are probed as well: one
//     that was only stalled may have joined the core again before its
//     tomb reached it and it came back to the books. Its "in" stops the
//     refound like any member's; its silence does not.
//
// Two founders cannot arise: if X < Y both founded (both keep state
// files), Y answered X's probe "out" (had it founded first it would have
// said so), and was then barred from founding for freezeFor; Y's own
// probe went out at most probeWindow before Y founded, so X answered it
// more than freezeFor − 2·probeWindow after X's own probe went out, which
// is after X founded (at most probeWindow after that) when freezeFor >
// 3·probeWindow: X then answered "in the core", and Y did not found. A
// member that does not answer (crashed, stopped, cut off) stops every
// refounding: it may be the core. The prober then logs a warning naming
// the members that did not answer.

const (
	refoundAfter = 30 // rounds
	probeWindow  = 10 // rounds
	freezeFor    = 4 * probeWindow
)

// probeMsg is a ctlProbe's body, echoed by its ctlProbeAnswer.
type probeMsg struct {
	Nonce uint64 `json:"nonce"`
	// The answer's fields:
	Out     bool      `json:"out,omitempty"`
	Floor   uint64    `json:"floor,omitempty"`   // the highest epoch the sender knows (probe and answer)
	Members []node.ID `json:"members,omitempty"` // the members in its book
	Durable bool      `json:"durable,omitempty"` // it keeps a state file (only such a member founds)
}

// probe is the refounding this member is asking about.
type probe struct {
	nonce   uint64
	sent    time.Time
	asked   []node.ID
	extra   []node.ID // members the core excluded lately: asked too, their silence does not count
	answers map[node.ID]ticket.ProbeAnswer
}

// answered reports whether every member in ids answered.
func (p *probe) answered(ids []node.ID) bool {
	for _, id := range ids {
		if _, ok := p.answers[id]; !ok {
			return false
		}
	}
	return true
}

// probeExcluded: a member struck off because the core excluded it is
// probed too for this long (ticket.AddressBook.Excluded); a live one is
// back in the books within a gossip round or two.
const probeExcluded = time.Minute

// refounding is the daemon's refounding state.
type refounding struct {
	stuckSince    time.Time // all slots out and one joining since then
	frozenUntil   time.Time // no joins until then (another member's probe)
	probing       time.Time // nor until then (this member's own)
	noFound       time.Time // no founding until then (a lower member asked)
	askedByHigher time.Time // a higher member's probe was answered "out" then
	p             *probe
	probes        int // probes sent
	refounds      int // pools founded again
}

func (d *daemon) round() time.Duration { return d.cfg.roundOr() }

// allOut: no slot is in the core or granted a place, and none has a client.
func (d *daemon) allOut() bool {
	for _, s := range d.slots {
		if s.holder != nil || !out(s.mc.state) && s.mc.state != "joining" {
			return false
		}
	}
	return true
}

// members are the other members' IDs in the book (their first slots).
func (d *daemon) members() []node.ID {
	var ids []node.ID
	for _, id := range d.bk.others() {
		if id <= MaxMemberID {
			ids = append(ids, id)
		}
	}
	return ids
}

// floor is this member's mark: the highest epoch any of its machines
// issued or heard of, or its state file held at start (the file's later
// reserve is not a mark: reporting it would raise every mark by a reserve
// at each exchange).
func (d *daemon) floor() uint64 {
	f := d.cfg.Floor
	for _, s := range d.slots {
		d.do(s, func() { f = max(f, s.h.Mark()) })
	}
	return f
}

// learn raises every slot's mark to floor (heard from another member),
// and keeps it in the state file.
func (d *daemon) learn(floor uint64) {
	for _, s := range d.slots {
		d.do(s, func() { s.h.Learn(floor) })
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

// freeze drops the joins under way; no more start until frozen ends.
func (d *daemon) freeze() {
	for _, s := range d.slots {
		if s.mc.state == "joining" {
			d.do(s, func() { s.h.Reset() })
			s.mc.state, s.joining = "idle", time.Time{}
		}
	}
}

func (d *daemon) frozen(now time.Time) bool {
	return now.Before(d.rf.frozenUntil) || now.Before(d.rf.probing)
}

// tickRefound runs at each tick (after the slots were looked at).
func (d *daemon) tickRefound(now time.Time) {
	joining := false
	for _, s := range d.slots {
		joining = joining || s.mc.state == "joining"
	}
	// A member a higher one asked is stuck too, joining or not: the
	// higher one can never found the pool while this one is out, and its
	// probes keep this one frozen, so this one must ask in its turn.
	asked := now.Sub(d.rf.askedByHigher) < freezeFor*d.round()
	if !d.allOut() || !joining && d.rf.p == nil && !asked {
		d.rf.stuckSince = time.Time{}
	} else if d.rf.stuckSince.IsZero() {
		d.rf.stuckSince = now
	}
	if p := d.rf.p; p != nil {
		over := now.Sub(p.sent) > probeWindow*d.round()
		switch {
		case p.answered(p.asked) && (over || p.answered(p.extra)):
			d.decide(now)
		case over:
			d.rf.p = nil // somebody did not answer: it may be the core
			d.blocked(ticket.DecideRefound(d.mb.ID, d.floor(), d.cfg.StateFile != "", p.asked, p.answers))
		}
		if d.rf.p == nil {
			d.rf.probing = time.Time{}
		}
		return
	}
	if d.stopping || d.rf.stuckSince.IsZero() || now.Sub(d.rf.stuckSince) < refoundAfter*d.round() {
		return
	}
	d.rf.stuckSince = now // the next probe, if this one fails, a while later
	p := &probe{nonce: rand.Uint64(), sent: now, asked: d.members(), extra: d.bk.excluded(now, probeExcluded), answers: map[node.ID]ticket.ProbeAnswer{}}
	d.rf.p = p
	d.rf.probes++
	d.rf.probing = now.Add(probeWindow * d.round())
	d.freeze()
	body, _ := json.Marshal(probeMsg{Nonce: p.nonce, Floor: d.floor(), Durable: d.cfg.StateFile != ""})
	for _, id := range append(slices.Clone(p.asked), p.extra...) {
		_ = d.slots[0].drv.SendControl(id, ctlProbe, body)
	}
	d.mb.Log.Info("no process of the pool is in the core here: asking every member", "members", len(p.asked))
}

// decide founds the pool again if the probe allows it (the rule is
// ticket.DecideRefound's).
func (d *daemon) decide(now time.Time) {
	p := d.rf.p
	d.rf.p = nil
	if !d.allOut() || now.Before(d.rf.noFound) || d.stopping {
		return
	}
	r := ticket.DecideRefound(d.mb.ID, d.floor(), d.cfg.StateFile != "", p.asked, p.answers)
	if !r.Found {
		d.blocked(r)
		return
	}
	n := d.bk.size()
	if n == 0 {
		return
	}
	s0 := d.slots[0]
	var err error
	d.do(s0, func() { err = s0.h.Found(now, n, r.Floor) })
	if err != nil {
		d.mb.Log.Warn("cannot found the pool again", "err", err)
		return
	}
	d.keep(r.Floor + 1)
	d.rf.refounds++
	d.rf.stuckSince, d.rf.frozenUntil, d.rf.probing = time.Time{}, time.Time{}, time.Time{}
	d.look(s0)
	d.mb.Log.Warn("the pool had ended (no process of it in the core, every member agrees): founded it again", "tickets", n, "members", len(p.asked)+1, "floor", r.Floor)
	d.announce(Notice{Event: "refounded", Ticket: 0, Through: n - 1, Epoch: r.Floor + 1})
	d.serve()
}

// blocked logs why a probe did not found the pool, naming the members
// that stop it when some do.
func (d *daemon) blocked(r ticket.Refound) {
	switch {
	case len(r.Blocking) > 0 && r.Why != "a member with a lower ID founds instead":
		d.mb.Log.Warn("cannot found the pool again: "+r.Why, "blocking", r.Blocking)
	case r.Why != "":
		d.mb.Log.Info("not founding the pool again: "+r.Why, "members", r.Blocking)
	}
}

// probeFrame handles ctlProbe and ctlProbeAnswer (daemon goroutine).
func (d *daemon) probeFrame(from node.ID, typ uint8, body []byte) {
	var m probeMsg
	if json.Unmarshal(body, &m) != nil {
		return
	}
	now := time.Now()
	if m.Floor > 0 {
		d.learn(m.Floor) // the mark travels with every probe and answer
	}
	switch typ {
	case ctlProbe:
		for _, s := range d.slots {
			d.look(s)
		}
		a := probeMsg{Nonce: m.Nonce, Out: d.allOut() && !d.stopping}
		a.Floor, a.Durable = d.floor(), d.cfg.StateFile != ""
		if a.Out {
			a.Members = d.members()
			until := now.Add(freezeFor * d.round())
			if until.After(d.rf.frozenUntil) {
				d.rf.frozenUntil = until
			}
			d.freeze()
			if from < d.mb.ID && m.Durable {
				d.rf.noFound = until
			} else if d.rf.askedByHigher.IsZero() || now.Sub(d.rf.askedByHigher) >= freezeFor*d.round() {
				// First word that a higher member found the pool gone:
				// ask everyone once its probe is over, not refoundAfter
				// from now.
				d.rf.askedByHigher = now
				if d.rf.stuckSince.IsZero() || d.rf.stuckSince.After(now.Add(-(refoundAfter-probeWindow)*d.round())) {
					d.rf.stuckSince = now.Add(-(refoundAfter - probeWindow) * d.round())
				}
			} else {
				d.rf.askedByHigher = now
			}
		}
		b, _ := json.Marshal(a)
		_ = d.slots[0].drv.SendControl(from, ctlProbeAnswer, b)
	case ctlProbeAnswer:
		if p := d.rf.p; p != nil && m.Nonce == p.nonce && (slices.Contains(p.asked, from) || slices.Contains(p.extra, from)) {
			p.answers[from] = ticket.ProbeAnswer{Out: m.Out, Floor: m.Floor, Members: m.Members, Durable: m.Durable}
			if !m.Out {
				d.rf.p, d.rf.probing = nil, time.Time{} // there is a core: join it
			}
		}
	}
}
