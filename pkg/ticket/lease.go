package ticket

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Leases and the majority refound (Config.Quorum; doc.go, "A refound
// that needs a majority").
//
// A member's first process asks every member in its book for a lease each
// round (MsgLease, carrying its mark); a member grants it (MsgLeaseGrant)
// unless it promised its grants to a refound's prober. The lease lasts
// leaseFor rounds from the moment the holder sent the request it was
// granted for, on the holder's own clock, and the holder has a lease
// while a majority of the members in its book (itself included) granted
// requests sent within that time. A process may lend its ticket only
// while its member holds a lease, and a process that had one and lost it,
// or that has been in the core for long without one, leaves the core for
// good (LeaseLostEvent) and joins again as a new process, as an excluded
// one does (§4).
//
// A member that answers a refound probe "out" promises its grants to the
// prober for promiseFor: it grants leases to nobody else, and answers any
// other prober "taken". The prober founds the pool once a majority of its
// book (itself included) answered "out" and nobody answered "in", after
// waiting out the longest lease any of them may have granted before it
// promised (leaseWait).

const (
	leaseFor   = 4 // rounds a grant lasts, from the holder's request, times Config.Stretch (leaseTime)
	leaseGrace = 8 // rounds a new process in the core may go without a lease (< promiseFor − leaseFor·S)
)

// leaseTime is how long a grant lasts, from the holder's request:
// leaseFor rounds for every unit of Config.Stretch, so that a busy host,
// whose support stretches that far, does not lose its lease first.
func (h *Member) leaseTime() time.Duration {
	return time.Duration(leaseFor*h.m.cfg.Stretch) * h.round()
}

// promiseFor is how many rounds a promise lasts, from the answer, on top
// of Config.Margin (promiseTime): past the prober's founding (at most
// probeWindow and leaseWait after its probe went out), with 4 rounds to
// spare. With Stretch 1 and a Margin of a few rounds it is short of
// refoundAfter, so that promises to probers that gave up do not stop the
// next probes for long.
func (h *Member) promiseFor() int {
	return probeWindow + 2*leaseFor*h.m.cfg.Stretch + 4
}

// promiseTime is how long a promise lasts: promiseFor rounds and
// Config.Margin, which leaseWait adds too, with the clocks' drift, so
// that a prober's founding (foundBy on its own clock) fits inside the
// promises whatever the Margin (doc.go, "A refound that needs a
// majority").
func (h *Member) promiseTime() time.Duration {
	return time.Duration(float64(time.Duration(h.promiseFor())*h.round()+h.m.cfg.Margin) * (1 + 2*h.m.cfg.Drift))
}

// foundBy is how long after its probe went out a prober may still found:
// two rounds short of the promises (promiseTime, on the prober's own
// clock, which runs at most 2ρ slower than a promiser's).
func (h *Member) foundBy() time.Duration {
	return time.Duration(h.promiseFor()-2)*h.round() + h.m.cfg.Margin
}

// bugLeaseIgnoresPromise: under Quorum a member that promised its grants
// to a prober grants leases to others all the same. Tests only.
const bugLeaseIgnoresPromise bug = 64

// bugProbeAtPromiseEnd: under Quorum a member promised to a prober
// probes the moment the promise ends instead of joining the prober's new
// pool first, which takes the founder's lease away. Tests only.
const bugProbeAtPromiseEnd bug = 65

// bugJoinWhileTaken: under Quorum a member that answered a prober
// "taken" (it was probing itself) joins that prober's new pool at once,
// where it gets no lease while the others' promises last. Tests only.
const bugJoinWhileTaken bug = 66

// probeTaken: an answer "out" from a member that promised its grants to
// another prober; it counts neither way.
const probeTaken = probeDurable << 1

// probeOver: on a MsgProbe, the prober gave that probe (its Attempt) up
// and founds nothing on it (abandon): a member that promised it its grants
// or froze for it is free again.
const probeOver = probeTaken << 1

// bugKeepPromises: a prober that gives its probe up (a member answered
// "in", or no majority answered "out") tells nobody, and the members that
// answered "out" keep their grants and their freeze for it until they run
// out. Tests only.
const bugKeepPromises bug = 155

// bugProbeOverJoin: a member probes at refoundAfter rounds even while a
// CJOIN of its is out and unanswered, and the probe's freeze drops the
// join its grant then completes. Tests only.
const bugProbeOverJoin bug = 157

// leasing is a first process's leases: those it holds and the promise it
// gave.
type leasing struct {
	grants       map[node.ID]time.Time // grantor: send time (own clock) of the newest request it granted
	until        time.Time             // the lease lasts until then (never moves back)
	held         bool                  // the current Machine has held a lease
	since        time.Time             // the current Machine is in the core since then
	asked        time.Time             // the last requests went out then
	promised     node.ID               // grants only to this prober
	promiseNonce uint64                // for this probe of it (its Attempt)
	promiseUntil time.Time
	takenUntil   time.Time // another prober holds promises: no join until then (Frozen)
	takenBy      node.ID   // the prober answered "taken" that set takenUntil last
	takenNonce   uint64    // its probe's Attempt
	takenPrev    time.Time // takenUntil before that answer moved it
	admitFrom    time.Time // a founder: no place for another member's process before then (Member.Step)
	lost         int
}

// quorum: this process runs leases and the majority refound.
func (h *Member) quorum() bool { return h.pc != nil && h.base.Quorum }

// majority of n members.
func majority(n int) int { return n/2 + 1 }

// leaseWait is how long a prober waits, after a majority promised it
// their grants, before it founds: the longest lease granted before a
// promise, measured on another clock (Config.Drift both ways), and a
// round for the holder to notice.
func (h *Member) leaseWait() time.Duration {
	d := time.Duration(float64(h.leaseTime()) * (1 + 2*h.m.cfg.Drift))
	return d + h.round() + h.m.cfg.Margin
}

// Leased reports whether the member holds a lease at now (always true
// without Config.Quorum). A member's other processes know the lease the
// first one holds from the service (MsgLeased).
func (h *Member) Leased(now time.Time) bool {
	if !h.base.Quorum {
		return true
	}
	return now.Before(h.ls.until)
}

// LeaseUntil is when the member's lease ends (zero without Config.Quorum).
func (h *Member) LeaseUntil() time.Time {
	if !h.base.Quorum {
		return time.Time{}
	}
	return h.ls.until
}

// leased takes the lease the member's first process holds, until the
// Unix time in ns (MsgLeased), on a member's other process. Both run on
// one host's clock, so the time needs no drift allowance; a lease never
// moves back, so a stale word only makes the process stop sooner.
func (h *Member) leased(untilNS uint64) {
	if h.pc != nil || !h.base.Quorum || untilNS == 0 || untilNS > uint64(1<<63-1) {
		return
	}
	if u := time.Unix(0, int64(untilNS)); u.After(h.ls.until) {
		h.ls.until = u
	}
}

// LeaseStats: how many times a process of this member lost its lease.
func (h *Member) LeaseStats() int { return h.ls.lost }

// grantsTo: the member may grant a lease to id at now.
func (h *Member) grantsTo(id node.ID, now time.Time) bool {
	ls := &h.ls
	if h.base.bug == bugLeaseIgnoresPromise {
		return true
	}
	return ls.promised == node.None || ls.promised == id || !now.Before(ls.promiseUntil)
}

// promise gives the member's grants to prober until now+promiseFor
// rounds (with the clocks' drift).
func (h *Member) promise(prober node.ID, nonce uint64, now time.Time) {
	h.ls.promised, h.ls.promiseNonce, h.ls.promiseUntil = prober, nonce, now.Add(h.promiseTime())
}

// recount raises the lease to what a majority of the book granted. A
// lease counted under an earlier book keeps until it ends: books change a
// member at a time, and a majority of one book meets a majority of the
// next (doc.go).
func (h *Member) recount(now time.Time) {
	ls := &h.ls
	var times []time.Time
	for _, id := range h.group {
		switch t, ok := ls.grants[id]; {
		case id == h.base.ID:
			if h.grantsTo(id, now) {
				times = append(times, now)
			}
		case ok:
			times = append(times, t)
		}
	}
	q := majority(len(h.group))
	if len(times) < q {
		return
	}
	slices.SortFunc(times, func(a, b time.Time) int { return b.Compare(a) })
	if u := times[q-1].Add(h.leaseTime()); u.After(ls.until) {
		ls.until = u
	}
}

// tickLease asks for leases each round and takes a process that lost
// its lease out of the core.
func (h *Member) tickLease(now time.Time) {
	if !h.quorum() {
		return
	}
	ls := &h.ls
	if ls.grants == nil {
		ls.grants = map[node.ID]time.Time{}
	}
	for id := range ls.grants {
		if !slices.Contains(h.group, id) {
			delete(ls.grants, id)
		}
	}
	if now.Sub(ls.asked) >= h.round() || now.Before(ls.asked) {
		ls.asked = now
		for _, id := range h.members() {
			h.out = append(h.out, node.Envelope[Msg]{From: h.base.ID, To: id,
				Msg: Msg{Type: MsgLease, Attempt: uint64(now.UnixNano()), Floor: h.mark()}})
		}
	}
	h.recount(now)
	h.checkLease(now)
}

// checkLease takes the process out of the core if it lost its lease, or
// never had one in leaseGrace rounds. Only a leased process hands out
// places (Member.Step drops CJOINs otherwise), so a process admitted to
// a core whose leases a refound's majority took away was admitted at
// most leaseFor rounds after the promises, and leaves the core before
// they end (leaseFor·S + leaseGrace < promiseFor).
func (h *Member) checkLease(now time.Time) {
	ls := &h.ls
	if outState(h.m.st) {
		ls.since, ls.held = time.Time{}, false
		return
	}
	if ls.since.IsZero() {
		ls.since = now
	}
	if h.Leased(now) {
		ls.held = true
		return
	}
	if !ls.held && now.Sub(ls.since) < leaseGrace*h.round() {
		return
	}
	why := fmt.Sprintf("held %v, round overdue by %v, factor %d;%s", ls.held, max(0, now.Sub(h.m.roundAt)).Round(time.Millisecond), h.m.health.factor(), h.leaseSummary(now))
	for _, id := range h.group {
		if t, ok := h.ls.grants[id]; ok && id != h.base.ID {
			why += fmt.Sprintf(" %v's last grant ended %v ago;", id, now.Sub(t.Add(h.leaseTime())).Round(time.Millisecond))
		}
	}
	cfg := h.next()
	cfg.Tickets, cfg.Contacts = 0, []node.ID{h.base.ID + 1}
	m, err := New(cfg)
	if err != nil {
		return
	}
	h.m = m
	ls.since, ls.held = time.Time{}, false
	ls.lost++
	lent := h.lent
	h.lent = nil
	h.events = append(h.events, LeaseLostEvent{Lent: lent, Why: why})
}

// leaseSummary says, for a refused lend, how far the member is from a
// lease: how many members of its book granted a request recent enough to
// count, of how many, and how many it needs (a member's other processes
// only know what the first one told them, MsgLeased).
func (h *Member) leaseSummary(now time.Time) string {
	if !h.quorum() {
		return " (its first process holds none)"
	}
	n := 0
	for _, id := range h.group {
		switch t, ok := h.ls.grants[id]; {
		case id == h.base.ID:
			if h.grantsTo(id, now) {
				n++
			}
		case ok && now.Before(t.Add(h.leaseTime())):
			n++
		}
	}
	s := fmt.Sprintf(" (leases granted by %d of %d, %d needed", n, len(h.group), majority(len(h.group)))
	if h.ls.promised != node.None && h.ls.promised != h.base.ID && now.Before(h.ls.promiseUntil) {
		s += fmt.Sprintf("; its grants are promised to prober %v for %v more", h.ls.promised, h.ls.promiseUntil.Sub(now).Round(time.Millisecond))
	}
	return s + ")"
}

// onLease answers a lease request.
func (h *Member) onLease(now time.Time, from node.ID, msg Msg) {
	h.learnFloor(msg.Floor)
	if !h.grantsTo(from, now) {
		return
	}
	h.out = append(h.out, node.Envelope[Msg]{From: h.base.ID, To: from,
		Msg: Msg{Type: MsgLeaseGrant, Attempt: msg.Attempt, Floor: h.mark()}})
}

// onLeaseGrant records a grant.
func (h *Member) onLeaseGrant(now time.Time, from node.ID, msg Msg) {
	h.learnFloor(msg.Floor)
	if msg.Attempt == 0 || msg.Attempt > uint64(1<<63-1) {
		return
	}
	t := time.Unix(0, int64(msg.Attempt))
	if t.After(now) || !slices.Contains(h.group, from) {
		return
	}
	if h.ls.grants == nil {
		h.ls.grants = map[node.ID]time.Time{}
	}
	if old, ok := h.ls.grants[from]; !ok || t.After(old) {
		h.ls.grants[from] = t
	}
	h.recount(now)
}

// leaseWake is when the leases need a Tick next.
func (h *Member) leaseWake() time.Time {
	if !h.quorum() {
		return time.Time{}
	}
	return h.ls.asked.Add(h.round())
}

// DecideQuorum is DecideRefound's rule under Config.Quorum: self founds
// when a majority of asked and itself answered "out" (promising self
// their grants), nobody answered "in", no answer named a member not
// asked, and self keeps a state file. Unlike DecideRefound a lower
// member does not defer it: the promises keep two probers from both
// having a majority. Silent members and members that promised another prober ("taken")
// do not stop it while the majority holds; they are named in Blocking
// when it does not.
func DecideQuorum(self node.ID, own uint64, durable bool, asked []node.ID, answers map[node.ID]ProbeAnswer) Refound {
	floor := own
	for _, id := range slices.Sorted(maps.Keys(answers)) {
		if a := answers[id]; !slices.Contains(asked, id) {
			if !a.Out {
				return Refound{Blocking: []node.ID{id}, Why: "a member is in the core"}
			}
			floor = max(floor, a.Floor)
		}
	}
	var silent []node.ID
	outs, unknown := 1, node.None
	for _, id := range asked {
		a, ok := answers[id]
		switch {
		case !ok:
			silent = append(silent, id)
			continue
		case !a.Out:
			return Refound{Blocking: []node.ID{id}, Why: "a member is in the core"}
		}
		floor = max(floor, a.Floor)
		if a.Taken {
			silent = append(silent, id)
			continue
		}
		outs++
		for _, m := range a.Members {
			if m != self && !slices.Contains(asked, m) && unknown == node.None {
				unknown = m
			}
		}
	}
	switch q := majority(len(asked) + 1); {
	case outs < q:
		return Refound{Blocking: silent, Why: fmt.Sprintf("%d of %d members answered out, %d needed: the core may be among the rest", outs, len(asked)+1, q)}
	case unknown != node.None:
		return Refound{Blocking: []node.ID{unknown}, Why: "an answer names a member this one has not heard of yet"}
	case !durable:
		return Refound{Why: "this member keeps no state file, so it does not found"}
	}
	return Refound{Found: true, Floor: min(floor, maxEpoch-RefoundJump) + RefoundJump}
}

// LeaseLostEvent: the member's lease ended while its process was in the
// core (or it never got one): the process left the core for good, as an
// excluded one does, and Lent, if any, is no longer the command's.
type LeaseLostEvent struct {
	Lent *Epoch
	// Why says, for the log, how the lease ran out (how late the member
	// ran, whose grants count). Not printed with the event.
	Why string `json:"-"`
}

func (LeaseLostEvent) Kind() string   { return "lease-lost" }
func (LeaseLostEvent) String() string { return "lease lost: out of the core" }

// tickQuorum runs a probe under Config.Quorum: once every member
// answered or the window is over, DecideQuorum; if it founds, the member
// first waits out the leases the majority may have granted before they
// promised (leaseWait), still frozen and still promised, and founds then
// unless an "in" arrived meanwhile (onProbeAnswer drops the probe).
func (h *Member) tickQuorum(now time.Time, p *probe) {
	rf := &h.rf
	if !p.foundAt.IsZero() {
		// The promises end promiseFor after the answers (after p.sent):
		// past that, the majority may grant others again, so the member
		// founds only well before (a member paused meanwhile gives up).
		inTime := now.Sub(p.sent) < h.foundBy()
		switch {
		case inTime && now.Before(p.foundAt):
			return
		case inTime && !h.Leased(now):
			p.foundAt = now.Add(h.round() / 2) // the new mark has not reached a majority yet
			return
		case !inTime:
			h.abandon(p)
			h.blocked(Refound{Why: "no majority granted a lease with the new mark while the promises lasted"})
			return
		}
		h.decide(now)
		return
	}
	over := now.Sub(p.sent) > probeWindow*h.round()
	if !over && !(p.answered(p.asked) && p.answered(p.extra)) {
		return
	}
	r := DecideQuorum(h.base.ID, h.mark(), rf.local.Durable, p.asked, p.answers)
	if !r.Found || !h.allOut() || rf.local.Stopping {
		h.abandon(p) // it founds nothing: free to grant again, and so are the others
		// Probers that took each other's promises try again at random
		// times, the next at least once the promises are over.
		pf := h.promiseFor()
		wait := time.Duration(pf+1+h.base.Rand.IntN(pf))*h.round() + h.m.cfg.Margin
		rf.stuckSince = now.Add(wait - refoundAfter*h.round())
		h.blocked(r)
		return
	}
	p.foundAt, p.floor = now.Add(h.leaseWait()), r.Floor
	// The new pool's first epoch must reach a majority before it is
	// used: the mark rises to it now, the leases held so far are
	// dropped, and the member founds only once a majority granted
	// requests that carry it (the promisers grant only this member).
	h.Learn(r.Floor)
	h.leaseReset()
	rf.probing = p.foundAt
}

// leaseReset drops the leases held (a prober about to found: the grants
// carried a mark below its new pool's first epoch), and asks again at
// the next Tick.
func (h *Member) leaseReset() {
	h.ls.until, h.ls.asked = time.Time{}, time.Time{}
	clear(h.ls.grants)
}
