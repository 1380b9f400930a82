package ticket

import (
	"fmt"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Founding the pool again, as a member's first process runs it (Member).
//
// The core can end while every member is alive: all of its processes
// left at once, or all lost their support together (a host stalled longer
// than the support window, beyond §4's fault model of at most k failures
// among 2k+1 neighbours). The seed has nothing to say about it: its pool
// is then gone. Here the members find that out and one of them founds the
// pool again, under a rule that cannot make two pools:
//
//   - A member whose processes have all been out of the core for
//     refoundAfter rounds, one of them trying to join all along, sends
//     MsgProbe to every member in its book (MsgGroup), and to the members
//     the core excluded lately (Local.Excluded).
//   - A member that answers "out" to a higher member's probe is stuck too
//     (only a lower member can found, and the higher one's probes keep it
//     frozen, so it would never be joining): it sends its own probe
//     probeWindow later.
//   - A member answers "out" only when none of its processes is in the
//     core or on its way in with a place granted (linking), and none has
//     a client. Answering "out" freezes it for freezeFor: it drops the
//     joins under way and starts none (FreezeEvent; Frozen), so that it
//     stays out while the prober counts; if the prober's ID is lower than
//     its own, it founds nothing itself meanwhile.
//   - The prober founds the pool when, within probeWindow of sending,
//     every member it asked answered "out", nobody named a member it did
//     not ask, it is still out itself, it keeps a state file, and its ID
//     is the lowest of those that keep one (DecideRefound). Its tickets'
//     epochs start RefoundJump above the highest mark anyone reported
//     (doc.go, "Fencing across refounds"); probes and answers carry the
//     marks both ways, and every member raises its own to them
//     (LearnEvent).
//   - A member whose CJOIN is out and unanswered, after one that was
//     answered, waits for the answer (at most Retry) before it probes
//     (Machine.JoinInFlight): the probe's freeze would drop the join
//     its grant completes, and the coordinator would hold the place for
//     a joiner that moved on until it excluded it.
//   - A prober that founds nothing on its probe (an "in", a silent
//     member, no majority) says so to every member it asked (MsgProbe
//     with probeOver, abandon): what they promised and froze for that
//     probe ends at once. A member waiting to join through a process cut
//     off probes while the core lives; without the word its probe took
//     the core's grants for promiseFor rounds.
//   - A member without a state file never founds: restarted, it would not
//     know whether the pool's epochs had gone past its own.
//   - Members the core excluded are struck off the book (they are not
//     asked, so a dead one does not stop the refound for good), but for a
//     while after their exclusion they are probed as well: one that was
//     only stalled may have joined the core again before it came back to
//     the books. Its "in" stops the refound like any member's; its
//     silence does not.
//
// Two founders cannot arise: if X < Y both founded (both keep state
// files), Y answered X's probe "out" (had it founded first it would have
// said so), and was then barred from founding for freezeFor; Y's own
// probe went out at most probeWindow before Y founded, so X answered it
// more than freezeFor − 2·probeWindow after X's own probe went out, which
// is after X founded (at most probeWindow after that) when freezeFor >
// 3·probeWindow: X then answered "in the core", and Y did not found. A
// member that does not answer (crashed, stopped, cut off) stops every
// refounding: it may be the core. The prober then reports the members
// that did not answer (BlockedEvent).
//
// The service's part is what the Member cannot see: its other processes
// and clients (Local, sent each tick, so at most a tick old when a probe
// is answered), and carrying out FreezeEvent and LearnEvent on them.

const (
	refoundAfter = 30 // rounds
	probeWindow  = 10 // rounds
	freezeFor    = 4 * probeWindow
)

// Probe flags (MsgProbe's and MsgProbeAnswer's Ticket).
const (
	probeOut     = 1 << iota // the answerer is out
	probeDurable             // the sender keeps a state file
)

// Local is what the service knows of the member beyond its first
// process (MsgLocal).
type Local struct {
	// Busy: a client holds one of the member's tickets, or another of its
	// processes is in the core or has a place granted.
	Busy bool
	// Joining: another of its processes is asking to join.
	Joining bool
	// Stopping: the member is stopping; it founds nothing and is never
	// "out".
	Stopping bool
	// Durable: the member keeps its mark in a state file.
	Durable bool
	// Floor: the marks of its other processes and its state file.
	Floor uint64
	// N is the pool's size, as the book knows it.
	N uint32
	// Excluded are members the core excluded lately
	// (AddressBook.Excluded): probed too, their silence does not count.
	Excluded []node.ID
}

// ProbeEvent: this member found the pool gone and asks every member
// (Members of them) whether any of its processes is in the core.
type ProbeEvent struct {
	Members int
}

func (ProbeEvent) Kind() string     { return "probe" }
func (e ProbeEvent) String() string { return fmt.Sprintf("probe %d members", e.Members) }

// BlockedEvent: a probe did not found the pool again, and why; Blocking
// names the members that stop it (silent ones, or a lower one that founds
// instead: Lower).
type BlockedEvent struct {
	Why      string
	Blocking []node.ID
	Lower    bool
}

func (BlockedEvent) Kind() string     { return "blocked" }
func (e BlockedEvent) String() string { return fmt.Sprintf("blocked: %s %v", e.Why, e.Blocking) }

// RefoundedEvent: this member founded the pool of N tickets again, its
// epochs above Floor, having asked Members other members.
type RefoundedEvent struct {
	N       uint32
	Floor   uint64
	Members int
}

func (RefoundedEvent) Kind() string { return "refounded" }
func (e RefoundedEvent) String() string {
	return fmt.Sprintf("refounded 0..%d epoch %d", e.N-1, e.Floor+1)
}

// FreezeEvent: the member answered "out" or probes: the service drops the
// joins of its other processes under way and starts none while Frozen.
type FreezeEvent struct{}

func (FreezeEvent) Kind() string   { return "freeze" }
func (FreezeEvent) String() string { return "freeze" }

// LearnEvent: another member's mark, heard in a probe or an answer: the
// member's other processes and its state file take it.
type LearnEvent struct {
	Floor uint64
}

func (LearnEvent) Kind() string     { return "learn" }
func (e LearnEvent) String() string { return fmt.Sprintf("learn %d", e.Floor) }

// probe is the refounding this member is asking about.
type probe struct {
	nonce   uint64
	sent    time.Time
	asked   []node.ID
	extra   []node.ID
	answers map[node.ID]ProbeAnswer
	foundAt time.Time // Config.Quorum: a majority answered; found then (leaseWait)
	floor   uint64
}

func (p *probe) answered(ids []node.ID) bool {
	for _, id := range ids {
		if _, ok := p.answers[id]; !ok {
			return false
		}
	}
	return true
}

// refounding is a member's refounding state.
type refounding struct {
	local         Local
	stuckSince    time.Time          // all out and one joining since then
	frozenUntil   time.Time          // no joins until then (another member's probe)
	frozenBy      node.ID            // the prober whose probe set frozenUntil last
	frozenNonce   uint64             // that probe's Attempt
	frozenPrev    time.Time          // frozenUntil before that probe moved it
	over          map[node.ID]uint64 // per prober, the last probe it gave up (probeOver may overtake the probe)
	probing       time.Time          // nor until then (this member's own)
	noFound       time.Time          // no founding until then (a lower member asked)
	askedByHigher time.Time          // a higher member's probe was answered "out" then
	p             *probe
	probes        int
	refounds      int
}

// RefoundStats are the probes sent and the pools founded again.
func (h *Member) RefoundStats() (probes, refounds int) { return h.rf.probes, h.rf.refounds }

// Frozen reports whether the member starts no join at now (a probe of its
// own or another member's is under way). Under Config.Quorum a member
// whose grants are promised to another prober stays frozen until the
// promise ends, "refounded" heard or not: until then it can hold no lease,
// and a process of it that joined the new pool would leave it again
// after leaseGrace, abruptly, as a crashed one does (lease.go).
func (h *Member) Frozen(now time.Time) bool {
	if h.quorum() && h.ls.promised != node.None && h.ls.promised != h.base.ID && now.Before(h.ls.promiseUntil) {
		return true
	}
	if h.quorum() && now.Before(h.ls.takenUntil) && (h.rf.p == nil || h.rf.p.foundAt.IsZero()) {
		return true // it answered another prober "taken" (onProbe)
	}
	return now.Before(h.rf.frozenUntil) || now.Before(h.rf.probing)
}

func (h *Member) round() time.Duration { return h.m.cfg.Round }

func outState(st state) bool {
	return st == stIdle || st == stLeft || st == stExcluded || st == stJoining
}

// allOut: no process of the member is in the core or granted a place,
// and none has a client.
func (h *Member) allOut() bool { return !h.rf.local.Busy && h.lent == nil && outState(h.m.st) }

// mark is the member's mark, its other processes' included.
func (h *Member) mark() uint64 { return max(h.Mark(), h.rf.local.Floor) }

// members are the other members in the book.
func (h *Member) members() []node.ID {
	var out []node.ID
	for _, id := range h.group {
		if id != h.base.ID {
			out = append(out, id)
		}
	}
	return out
}

func (h *Member) flags(out bool) uint32 {
	f := uint32(0)
	if out {
		f |= probeOut
	}
	if h.rf.local.Durable {
		f |= probeDurable
	}
	return f
}

func (h *Member) learnFloor(f uint64) {
	if f > h.mark() {
		h.Learn(f)
		h.events = append(h.events, LearnEvent{Floor: f})
	}
}

// freeze drops a join under way here, and asks the service to do the same
// on the member's other processes.
func (h *Member) freeze() {
	h.Reset()
	h.events = append(h.events, FreezeEvent{})
}

// tickRefound runs at each Tick.
func (h *Member) tickRefound(now time.Time) {
	rf, round := &h.rf, h.round()
	joining := rf.local.Joining || h.m.st == stJoining
	// A member a higher one asked is stuck too, joining or not: the
	// higher one can never found the pool while this one is out, and its
	// probes keep this one frozen, so this one must ask in its turn.
	asked := now.Sub(rf.askedByHigher) < freezeFor*round
	if !h.allOut() || !joining && rf.p == nil && !asked {
		rf.stuckSince = time.Time{}
	} else if rf.stuckSince.IsZero() {
		rf.stuckSince = now
		if h.quorum() && !h.ls.takenUntil.IsZero() && now.Sub(h.ls.takenUntil) < refoundAfter*round {
			// Out of a freeze for another prober's promises, which every
			// prober that took each other's promises leaves at about the
			// same moment: wait a random while more before asking, or
			// they would ask together again.
			rf.stuckSince = now.Add(time.Duration(h.base.Rand.IntN(h.promiseFor())) * round)
		}
	}
	if p := rf.p; p != nil && h.quorum() {
		h.tickQuorum(now, p)
		if rf.p == nil {
			rf.probing = time.Time{}
		}
		return
	}
	if p := rf.p; p != nil {
		over := now.Sub(p.sent) > probeWindow*round
		switch {
		case p.answered(p.asked) && (over || p.answered(p.extra)):
			h.decide(now)
		case over && h.base.bug == bugRefoundSilent:
			for _, id := range p.asked {
				if _, ok := p.answers[id]; !ok {
					p.answers[id] = ProbeAnswer{Out: true}
				}
			}
			h.decide(now)
		case over:
			h.abandon(p) // somebody did not answer: it may be the core
			h.blocked(DecideRefound(h.base.ID, h.mark(), rf.local.Durable, p.asked, p.answers))
		}
		if rf.p == nil {
			rf.probing = time.Time{}
		}
		return
	}
	if rf.local.Stopping || rf.stuckSince.IsZero() || now.Sub(rf.stuckSince) < refoundAfter*round {
		return
	}
	if h.quorum() && rf.local.Durable && !h.grantsTo(h.base.ID, now) {
		// Promised to another prober: no probe of its own until that
		// promise ends (it cannot count itself meanwhile), and then not
		// before it has tried to join for refoundAfter rounds. The
		// prober has most likely founded, and its pool serves only while
		// a majority grants its lease; a probe sent the moment the
		// promise ends takes those grants away again (every answer "out"
		// is a promise to this member), its founder loses its lease and
		// leaves the core, and the members promised to this probe do the
		// same to the next founder: the pool is founded again and again
		// and the promised members never serve (doc.go, "After a
		// refound: liveness").
		rf.stuckSince = h.ls.promiseUntil
		if h.base.bug == bugProbeAtPromiseEnd {
			rf.stuckSince = h.ls.promiseUntil.Add(-refoundAfter * round)
		}
		return
	}
	if h.quorum() && now.Before(h.ls.takenUntil) {
		// It answered another prober "taken": that prober may have
		// founded; join its pool first, as a member it promised does.
		rf.stuckSince = h.ls.takenUntil
		return
	}
	if h.m.JoinInFlight(now) && h.base.bug != bugProbeOverJoin {
		// A CJOIN is out and unanswered: its grant may be on the way, and
		// the probe's freeze would drop the join it grants (the
		// coordinator would hold the place until it excluded the joiner,
		// turning others away meanwhile). Ask again at the next tick:
		// at most Retry later.
		return
	}
	rf.stuckSince = now // the next probe, if this one fails, a while later
	p := &probe{nonce: h.base.Rand.Uint64(), sent: now, asked: h.members(), extra: slices.Clone(rf.local.Excluded),
		answers: map[node.ID]ProbeAnswer{}}
	rf.p = p
	rf.probes++
	rf.probing = now.Add(probeWindow * round)
	if h.quorum() && rf.local.Durable {
		h.promise(h.base.ID, p.nonce, now) // only a member with a state file founds
	}
	h.freeze()
	for _, id := range append(slices.Clone(p.asked), p.extra...) {
		h.out = append(h.out, node.Envelope[Msg]{From: h.base.ID, To: id,
			Msg: Msg{Type: MsgProbe, Attempt: p.nonce, Floor: h.mark(), Ticket: h.flags(false)}})
	}
	h.events = append(h.events, ProbeEvent{Members: len(p.asked)})
}

// decide founds the pool again if the probe allows it.
func (h *Member) decide(now time.Time) {
	rf := &h.rf
	p := rf.p
	rf.p = nil
	if !h.allOut() || now.Before(rf.noFound) || rf.local.Stopping {
		h.abandon(p)
		return
	}
	r := DecideRefound(h.base.ID, h.mark(), rf.local.Durable, p.asked, p.answers)
	if h.quorum() {
		r = DecideQuorum(h.base.ID, h.mark(), rf.local.Durable, p.asked, p.answers)
		r.Floor = max(r.Floor, p.floor)
	}
	if !r.Found {
		h.abandon(p)
		h.blocked(r)
		return
	}
	n := rf.local.N
	if n == 0 {
		h.abandon(p)
		return
	}
	if err := h.Found(now, n, r.Floor); err != nil {
		h.abandon(p)
		h.events = append(h.events, BlockedEvent{Why: err.Error()})
		return
	}
	rf.refounds++
	if h.quorum() {
		h.ls.admitFrom = p.sent.Add(h.promiseTime())
	}
	rf.stuckSince, rf.frozenUntil, rf.probing = time.Time{}, time.Time{}, time.Time{}
	h.events = append(h.events, RefoundedEvent{N: n, Floor: r.Floor, Members: len(p.asked) + 1})
	h.announce(now, Notice{Event: "refounded", Ticket: 0, Through: n - 1, Epoch: r.Floor + 1})
}

func (h *Member) blocked(r Refound) {
	if r.Why != "" {
		h.events = append(h.events, BlockedEvent{Why: r.Why, Blocking: r.Blocking, Lower: r.Why == whyLower})
	}
}

// onProbe answers another member's probe.
func (h *Member) onProbe(now time.Time, from node.ID, msg Msg) {
	rf, round := &h.rf, h.round()
	h.learnFloor(msg.Floor)
	if msg.Ticket&probeOver != 0 {
		h.probeOver(from, msg.Attempt)
		return
	}
	if rf.over[from] == msg.Attempt && msg.Attempt != 0 {
		return // given up already: its probeOver overtook it
	}
	out := h.allOut() && !rf.local.Stopping
	a := Msg{Type: MsgProbeAnswer, Attempt: msg.Attempt, Floor: h.mark(), Ticket: h.flags(out)}
	if out && h.quorum() {
		// Under Config.Quorum an "out" promises the prober this member's
		// grants (lease.go) if it keeps a state file (only such a member
		// founds); one promised to another prober says so. A member
		// probing itself gives way to a lower one that keeps a state
		// file, unless it is about to found.
		if p := rf.p; h.ls.promised == h.base.ID && from < h.base.ID && msg.Ticket&probeDurable != 0 &&
			(p == nil || p.foundAt.IsZero()) {
			rf.p, rf.probing, h.ls.promised = nil, time.Time{}, node.None
		}
		switch {
		case msg.Ticket&probeDurable == 0: // it never founds: nothing to promise
		case h.grantsTo(from, now):
			h.promise(from, msg.Attempt, now)
		default:
			a.Ticket |= probeTaken
			// The prober may get a majority's promises all the same,
			// and while they last no newcomer to its pool gets a lease:
			// a process of this member that joined it would leave again
			// after leaseGrace, abruptly, and could take the founder's
			// support with it (§4: a core of two). So this member
			// joins no pool until a promise to that prober would have
			// ended (Frozen), as a member that promised it waits.
			if h.base.bug != bugJoinWhileTaken {
				if until := now.Add(h.promiseTime()); until.After(h.ls.takenUntil) {
					h.ls.takenPrev, h.ls.takenBy, h.ls.takenNonce = h.ls.takenUntil, from, msg.Attempt
					h.ls.takenUntil = until
				}
			}
		}
	}
	if out {
		for _, id := range h.members() {
			a.View = append(a.View, Owner{ID: id})
		}
		until := now.Add(freezeFor * round)
		if until.After(rf.frozenUntil) {
			rf.frozenPrev, rf.frozenBy, rf.frozenNonce = rf.frozenUntil, from, msg.Attempt
			rf.frozenUntil = until
		}
		h.freeze()
		switch {
		case from < h.base.ID && msg.Ticket&probeDurable != 0:
			rf.noFound = until
		case rf.askedByHigher.IsZero() || now.Sub(rf.askedByHigher) >= freezeFor*round:
			// First word that a higher member found the pool gone: ask
			// everyone once its probe is over, not refoundAfter from now.
			rf.askedByHigher = now
			if soon := now.Add(-(refoundAfter - probeWindow) * round); rf.stuckSince.IsZero() || rf.stuckSince.After(soon) {
				rf.stuckSince = soon
			}
		default:
			rf.askedByHigher = now
		}
	}
	h.out = append(h.out, node.Envelope[Msg]{From: h.base.ID, To: from, Msg: a})
}

// onProbeAnswer records an answer to this member's probe.
func (h *Member) onProbeAnswer(from node.ID, msg Msg) {
	h.learnFloor(msg.Floor)
	p := h.rf.p
	if p == nil || msg.Attempt != p.nonce || !slices.Contains(p.asked, from) && !slices.Contains(p.extra, from) {
		return
	}
	a := ProbeAnswer{Out: msg.Ticket&probeOut != 0, Floor: msg.Floor, Durable: msg.Ticket&probeDurable != 0,
		Taken: msg.Ticket&probeTaken != 0}
	for _, o := range msg.View {
		a.Members = append(a.Members, o.ID)
	}
	p.answers[from] = a
	if a.Taken && h.quorum() && h.base.bug != bugJoinWhileTaken {
		// Another prober holds this member's promise, and may found
		// with a majority's: no join until promises given now end.
		if until := p.sent.Add(h.promiseTime()); until.After(h.ls.takenUntil) {
			h.ls.takenUntil = until
		}
	}
	if !a.Out {
		h.abandon(p) // there is a core: join it
		h.rf.probing = time.Time{}
	}
}

// abandon gives this member's probe up: it founds nothing on it. Its own
// grants are free again, and it tells every member it asked (probeOver),
// so that those that answered "out" grant leases and join again at once
// rather than when their promise and freeze run out. Without it a probe
// sent while the core lives (a member waiting to join through the
// process cut off, while the rest of the core is excluding it) took its
// grants, and every member's that answered "out", away from the core for
// promiseFor rounds: with one member cut off and two out, the two live
// processes of a core of five members kept grants from two of them, lost
// their leases, and the pool ended (TestSimCutAsTicketd, planted
// bugKeepPromises). Safe: a promise serves only the founding of that
// probe (lease.go), which never comes once it is given up; a later probe
// has a new Attempt and needs new promises, and a late probeOver names
// the old one.
func (h *Member) abandon(p *probe) {
	h.rf.p = nil
	if h.base.bug == bugKeepPromises || h.base.bug == bugProbeAtPromiseEnd {
		return // bugProbeAtPromiseEnd: the old rule, from before probeOver
	}
	if h.ls.promised == h.base.ID && h.ls.promiseNonce == p.nonce {
		h.ls.promised = node.None
	}
	for _, id := range append(slices.Clone(p.asked), p.extra...) {
		h.out = append(h.out, node.Envelope[Msg]{From: h.base.ID, To: id,
			Msg: Msg{Type: MsgProbe, Attempt: p.nonce, Ticket: probeOver}})
	}
}

// probeOver: prober gave its probe nonce up (abandon). A promise and a
// freeze given for that probe end now (the freeze of an "out" and that
// of a "taken" answer alike); those given for another prober or
// a later probe stay, as does the bar on founding a lower prober's probe
// set (noFound), which only delays this member's own refound.
func (h *Member) probeOver(prober node.ID, nonce uint64) {
	if h.rf.over == nil {
		h.rf.over = map[node.ID]uint64{}
	}
	h.rf.over[prober] = nonce
	if h.ls.promised == prober && h.ls.promiseNonce == nonce {
		h.ls.promised, h.ls.promiseUntil = node.None, time.Time{}
	}
	if rf := &h.rf; rf.frozenBy == prober && rf.frozenNonce == nonce {
		rf.frozenUntil, rf.frozenBy = rf.frozenPrev, node.None
	}
	if ls := &h.ls; ls.takenBy == prober && ls.takenNonce == nonce {
		ls.takenUntil, ls.takenBy = ls.takenPrev, node.None
	}
}

// refoundWake is when the refounding needs a Tick next.
func (h *Member) refoundWake() time.Time {
	rf, round := &h.rf, h.round()
	switch {
	case rf.p != nil && !rf.p.foundAt.IsZero():
		return rf.p.foundAt
	case rf.p != nil:
		return rf.p.sent.Add(probeWindow*round + 1)
	case !rf.stuckSince.IsZero():
		// A probe due while a CJOIN is in flight waits for its answer
		// (tickRefound), or for Retry to pass.
		w := rf.stuckSince.Add(refoundAfter * round)
		if a := h.m.joinAnswerBy(); a.After(w) {
			w = a
		}
		return w
	}
	return time.Time{}
}
