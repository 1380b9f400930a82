package ticketd

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
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
//     and its ID is the lowest of them all. Its tickets' epochs start 2^32
//     above the highest epoch anyone reported (as a reclaim's do, pkg/ticket
//     doc.go), so fencing numbers still only grow.
//
// Two founders cannot arise: if X < Y both founded, Y answered X's probe
// "out" (had it founded first it would have said so), and was then barred
// from founding for freezeFor; Y's own probe went out at most probeWindow
// before Y founded, so X answered it more than freezeFor − 2·probeWindow
// after X's own probe went out, which is after X founded (at most
// probeWindow after that) when freezeFor > 3·probeWindow: X then answered
// "in the core", and Y did not found. A member that does not answer
// (crashed, stopped, cut off) stops every refounding: it may be the core.
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
	Floor   uint64    `json:"floor,omitempty"`   // the highest epoch the member knows
	Members []node.ID `json:"members,omitempty"` // the members in its book
}

// probe is the refounding this member is asking about.
type probe struct {
	nonce   uint64
	sent    time.Time
	asked   []node.ID
	answers map[node.ID]probeMsg
}

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

// floor is the highest epoch this member knows of.
func (d *daemon) floor() uint64 {
	f := d.persist
	for _, s := range d.slots {
		d.do(s, func() { f = max(f, s.h.m.Floor()) })
	}
	return f
}

// freeze drops the joins under way; no more start until frozen ends.
func (d *daemon) freeze() {
	for _, s := range d.slots {
		if s.mc.state == "joining" {
			d.do(s, func() { s.h.reset() })
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
		switch {
		case len(p.answers) == len(p.asked):
			d.decide(now)
		case now.Sub(p.sent) > probeWindow*d.round():
			d.rf.p = nil // somebody did not answer: it may be the core
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
	p := &probe{nonce: rand.Uint64(), sent: now, asked: d.members(), answers: map[node.ID]probeMsg{}}
	d.rf.p = p
	d.rf.probes++
	d.rf.probing = now.Add(probeWindow * d.round())
	d.freeze()
	body, _ := json.Marshal(probeMsg{Nonce: p.nonce})
	for _, id := range p.asked {
		_ = d.slots[0].drv.SendControl(id, ctlProbe, body)
	}
	d.mb.Log.Info("no process of the pool is in the core here: asking every member", "members", len(p.asked))
}

// decide founds the pool again if the probe allows it.
func (d *daemon) decide(now time.Time) {
	p := d.rf.p
	d.rf.p = nil
	self := d.mb.ID
	floor := d.floor()
	for _, id := range p.asked {
		a := p.answers[id]
		if !a.Out || id < self {
			return
		}
		for _, m := range a.Members {
			if m != self && !slices.Contains(p.asked, m) {
				return // a member this one has not heard of yet
			}
		}
		floor = max(floor, a.Floor)
	}
	if !d.allOut() || now.Before(d.rf.noFound) || d.stopping {
		return
	}
	n := d.bk.size()
	if n == 0 {
		return
	}
	floor += 1 << 32
	s0 := d.slots[0]
	var err error
	d.do(s0, func() { err = s0.h.found(now, n, floor) })
	if err != nil {
		d.mb.Log.Warn("cannot found the pool again", "err", err)
		return
	}
	if d.cfg.StateFile != "" {
		d.persist = max(d.persist, floor+epochReserve)
	}
	d.rf.refounds++
	d.rf.stuckSince, d.rf.frozenUntil, d.rf.probing = time.Time{}, time.Time{}, time.Time{}
	d.look(s0)
	d.mb.Log.Warn("the pool had ended (no process of it in the core, every member agrees): founded it again", "tickets", n, "members", len(p.asked)+1)
	d.announce(Notice{Event: "refounded", Ticket: 0, Through: n - 1, Epoch: floor})
	d.serve()
}

// probeFrame handles ctlProbe and ctlProbeAnswer (daemon goroutine).
func (d *daemon) probeFrame(from node.ID, typ uint8, body []byte) {
	var m probeMsg
	if json.Unmarshal(body, &m) != nil {
		return
	}
	now := time.Now()
	switch typ {
	case ctlProbe:
		for _, s := range d.slots {
			d.look(s)
		}
		a := probeMsg{Nonce: m.Nonce, Out: d.allOut() && !d.stopping}
		if a.Out {
			a.Floor, a.Members = d.floor(), d.members()
			until := now.Add(freezeFor * d.round())
			if until.After(d.rf.frozenUntil) {
				d.rf.frozenUntil = until
			}
			d.freeze()
			if from < d.mb.ID {
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
		if p := d.rf.p; p != nil && m.Nonce == p.nonce && slices.Contains(p.asked, from) {
			p.answers[from] = m
			if !m.Out {
				d.rf.p, d.rf.probing = nil, time.Time{} // there is a core: join it
			}
		}
	}
}
