package mutex

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// Order properties the seeds promise, checked once faults have stopped
// (world.fairFrom), where each algorithm's fault model promises them:
//
//   - Ricart–Agrawala (Tanenbaum ch. 6, "A Distributed Algorithm"): a process
//     defers every request later than its own in (Lamport time, ID) order,
//     so no process enters while another's earlier request waits
//     (raOrder).
//   - central (Tanenbaum ch. 6, "A Centralized Algorithm": the coordinator
//     queues requests and grants in turn): each name is served first come,
//     first served in the order requests reach the coordinator (fcfsProbe).
//   - token ring: ring order (world.ringOrder).

// raOrder is called at every Ricart–Agrawala grant: daemon id entered name
// with token tok = ts<<32 | id. No other running daemon may then have an
// earlier request for name out: it would have deferred this one.
//
// The fencing token is (ts, ID) too, so the token check sees the same
// order when the skipped request finally enters; this check sees it at the
// entry that jumps the queue. It runs from the restarts that end the
// faults: a restarted daemon listens for a lease before it asks, so by
// then every daemon hears every other.
func (w *world) raOrder(at time.Time, id node.ID, name string, tok uint64) error {
	if !w.healed {
		return nil
	}
	ts := tok >> 32
	for _, p := range w.s.IDs() {
		if p == id || !w.s.Alive(p) || w.s.Paused(p) {
			continue
		}
		m, ok := w.s.Machine(p).(*ra)
		if !ok {
			continue
		}
		l := m.locks[name]
		if l == nil || l.held || l.ts == 0 {
			continue
		}
		if before(l.ts, p, ts, id) {
			return fmt.Errorf("ricart-agrawala order: daemon %d entered %q with (%d, %d) while daemon %d's earlier request (%d, %d) waited",
				id, name, ts, id, p, l.ts, p)
		}
	}
	return nil
}

// reqID names one client's request for one name.
type reqID struct {
	node   node.ID
	client uint64
	name   string
}

// arrival is a request as it reached the coordinator.
type arrival struct {
	at, last time.Time // first arrival, latest copy
	attempt  uint64    // which request of the client (0: a local client's)
}

// fcfsProbe wraps a central daemon and watches what reaches its
// coordinator and what the coordinator grants, from the messages alone:
// requests from other daemons (MsgAcquire, the waiters of a MsgReport)
// and its own clients' (LocalAcquire while it coordinates); withdrawals
// (MsgRelease, LocalRelease, a busy or unavailable answer); grants (a
// MsgGrant out, or a grant event for its own client). A grant while a
// request that reached the coordinator earlier still waits breaks FCFS.
// Requests that stopped being resent for a lease are forgotten, as the
// coordinator forgets them.
type fcfsProbe struct {
	Machine
	w        *world
	id       node.ID
	arrivals map[reqID]*arrival
	tokens   map[uint64]bool  // grants seen, so a re-sent grant is not a new one
	done     map[reqID]uint64 // the attempt last granted to each request: its late copies are not new
	now      time.Time        // the latest time given to Step or Tick
	active   bool             // coordinating, as of the last Ready
	err      error
}

func (p *fcfsProbe) Tick(now time.Time) {
	p.now = now
	p.Machine.Tick(now)
}

// watching: this daemon coordinates, so requests reach its queue. The
// daemons restart when faults stop, and the probe of each new life sees
// every request that reaches it from its takeover on. Grants are judged
// once the restarted daemons have settled (world.fairFrom, half the
// liveness window after healing): the queue a takeover rebuilds from the
// reports has no arrival order to keep, so FCFS is promised, and checked,
// within one coordinator's reign.
func (p *fcfsProbe) watching() bool {
	c, ok := p.Machine.(*central)
	return ok && c.leading && c.active
}

func (p *fcfsProbe) judging(now time.Time) bool {
	return p.w.healed && !p.w.fairFrom.IsZero() && !now.Before(p.w.fairFrom)
}

func (p *fcfsProbe) Step(now time.Time, in node.Envelope[Msg]) error {
	p.now = now
	if p.watching() {
		msg := in.Msg
		switch {
		case msg.Type == MsgAcquire:
			p.arrive(now, reqID{in.From, msg.Client, msg.Name}, msg.Attempt)
		case in.From == p.id && msg.Type == LocalAcquire:
			p.arrive(now, reqID{in.From, msg.Client, msg.Name}, 0)
		case msg.Type == MsgReport:
			for _, rec := range msg.Locks {
				if rec.Token == 0 && rec.Node == in.From {
					p.arrive(now, reqID{in.From, rec.Client, rec.Name}, rec.Attempt)
				}
			}
		case msg.Type == MsgRelease:
			// A release withdraws only the request it names: a copy
			// that arrives after the client asked again leaves the new
			// request queued, as the coordinator does.
			k := reqID{in.From, msg.Client, msg.Name}
			if a := p.arrivals[k]; a != nil && a.attempt == msg.Attempt {
				delete(p.arrivals, k)
			}
		case in.From == p.id && msg.Type == LocalRelease:
			delete(p.arrivals, reqID{in.From, msg.Client, msg.Name})
		}
	}
	return p.Machine.Step(now, in)
}

// arrive records a copy of a request.
func (p *fcfsProbe) arrive(now time.Time, k reqID, attempt uint64) {
	if d, ok := p.done[k]; ok && attempt != 0 && attempt <= d {
		return // a late copy of a request granted already, or of an older one (attempts grow)
	}
	if a := p.arrivals[k]; a != nil && attempt != 0 && attempt < a.attempt {
		return // a late copy of an older request
	} else if a != nil && a.attempt == attempt {
		a.last = now
		return
	}
	p.arrivals[k] = &arrival{at: now, last: now, attempt: attempt}
}

func (p *fcfsProbe) Ready() node.Ready[Msg] {
	r := p.Machine.Ready()
	now := p.now
	if !p.watching() {
		clear(p.arrivals)
		p.active = false
		return r
	}
	if !p.active {
		// Just took over: our own waiting clients are queued first,
		// through the loopback, before any other daemon's report.
		p.active = true
		c := p.Machine.(*central)
		for _, k := range c.sortedReqs() {
			if r := c.reqs[k]; !r.held {
				p.arrive(now, reqID{p.id, k.client, k.name}, 0)
			}
		}
	}
	for _, env := range r.Msgs {
		switch env.Msg.Type {
		case MsgGrant:
			k := reqID{env.To, env.Msg.Client, env.Msg.Name}
			p.done[k] = env.Msg.Attempt
			p.granted(now, k, env.Msg.Token)
		case MsgBusy, MsgUnavailable:
			delete(p.arrivals, reqID{env.To, env.Msg.Client, env.Msg.Name})
		}
	}
	for _, ev := range r.Events {
		switch e := ev.(type) {
		case GrantEvent:
			p.granted(now, reqID{p.id, e.Client, e.Name}, e.Token)
		case BusyEvent:
			delete(p.arrivals, reqID{p.id, e.Client, e.Name})
		case UnavailableEvent:
			delete(p.arrivals, reqID{p.id, e.Client, e.Name})
		}
	}
	return r
}

func (p *fcfsProbe) granted(now time.Time, k reqID, tok uint64) {
	if p.tokens[tok] {
		return
	}
	p.tokens[tok] = true
	mine := p.arrivals[k]
	delete(p.arrivals, k)
	if mine == nil || p.err != nil || !p.judging(now) {
		return // reached us before we watched: no order to judge
	}
	lease := 400 * time.Millisecond
	for _, o := range slices.SortedFunc(maps.Keys(p.arrivals), func(a, b reqID) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	}) {
		a := p.arrivals[o]
		if o.name != k.name || now.Sub(a.last) > lease {
			continue
		}
		if a.at.Before(mine.at) {
			p.err = fmt.Errorf("central FCFS: coordinator %d granted %q to %d/%d while %d/%d, which reached it %v earlier, waited",
				p.id, k.name, k.node, k.client, o.node, o.client, mine.at.Sub(a.at))
			return
		}
	}
}

// fcfsErr reports the first FCFS violation any coordinator saw.
func (w *world) fcfsErr() error {
	for _, id := range w.s.IDs() {
		if p, ok := w.s.Machine(id).(*fcfsProbe); ok && p.err != nil {
			return p.err
		}
	}
	return nil
}

// TestSimOrderCheckersCatchPlantedBugs: a Ricart–Agrawala daemon that hands
// the name from one local client to the next without asking again (the
// others' earlier requests wait), and a central coordinator that serves
// the newest waiter first, must be caught by the order checks alone.
func TestSimOrderCheckersCatchPlantedBugs(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator sweep: run without -race")
	}
	for _, c := range []struct {
		algo Algo
		what string
		set  func(*world)
	}{
		{RicartAgrawala, "ricart-agrawala order", func(w *world) { w.raHandoff = true }},
		{Central, "central FCFS", func(w *world) { w.centralLIFO = true }},
	} {
		simtest.Catch(t, c.algo.String()+" order", 100, func(seed uint64) error {
			_, err := runWorldWith(seed, c.algo, false, c.set)
			return err
		}, c.what)
	}
}

// TestSimCentralEvenSplit: four daemons split two against two, the
// coordinator on one side, for longer than an election and a takeover
// wait, while every client keeps asking. Neither side holds a strict
// majority, so neither may grant: the old coordinator loses its vouches
// and the other side's candidate never gets enough of them. Half of the
// members counted as a majority would let both sides grant at once.
func TestSimCentralEvenSplit(t *testing.T) { evenSplit(t, Central) }

// TestSimVotingEvenSplit: the same split under voting, where neither side
// can gather m > n/2 votes; with m = n/2 both sides would enter.
func TestSimVotingEvenSplit(t *testing.T) { evenSplit(t, Voting) }

func evenSplit(t *testing.T, algo Algo) {
	for _, seed := range sim.Seeds() {
		r := rand.New(rand.NewPCG(seed, 13))
		opts := sim.Options{Seed: seed, MinLatency: time.Millisecond, MaxLatency: time.Duration(2+r.IntN(5)) * time.Millisecond,
			Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		w := newWorld(seed, 4, opts, algo, false, nil)
		fail := func(err error) {
			t.Fatalf("%v\nreplay: %s", err, simtest.Replay(t, seed))
		}
		if err := w.s.RunFor(time.Second + time.Duration(r.Int64N(int64(time.Second)))); err != nil {
			fail(err)
		}
		// One side: the coordinator (central) or a random daemon, and a
		// random mate.
		first := w.s.IDs()[r.IntN(4)]
		for _, id := range w.s.IDs() {
			if p, ok := w.s.Machine(id).(*fcfsProbe); ok && p.Machine.(*central).leading {
				first = id
			}
		}
		var others []node.ID
		for _, id := range w.s.IDs() {
			if id != first {
				others = append(others, id)
			}
		}
		mate := others[r.IntN(len(others))]
		var side []node.ID
		for _, id := range others {
			if id != mate {
				side = append(side, id)
			}
		}
		w.s.Partition([]node.ID{first, mate}, side)
		if err := w.s.RunFor(2*time.Second + time.Duration(r.Int64N(int64(time.Second)))); err != nil {
			fail(err)
		}
		w.s.Heal()
		if err := w.s.RunFor(2 * time.Second); err != nil {
			fail(err)
		}
	}
	t.Logf("%v: %d seeds passed (four daemons split two against two)", algo, len(sim.Seeds()))
}

// TestSimCentralTakeoverKeepsHolder: daemon h's client holds "a" (and keeps
// renewing it); the coordinator crashes; a rival daemon's client asks for
// "a" at once or a little later. The daemon that takes over learns of the
// holder from h's report and must not grant "a" while the hold lasts, nor
// revoke it. Mutual exclusion and fencing are checked after every step.
func TestSimCentralTakeoverKeepsHolder(t *testing.T) {
	const lease = 400 * time.Millisecond
	for _, seed := range sim.Seeds() {
		r := rand.New(rand.NewPCG(seed, 14))
		ids := []node.ID{1, 2, 3}
		s := sim.New[Msg](sim.Options{Seed: seed, MinLatency: time.Millisecond, MaxLatency: time.Duration(1+r.IntN(5)) * time.Millisecond}, Codec{},
			func(id node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
				m, err := New(Config{ID: id, Peers: ids, Algo: Central, Lease: lease, Rand: rng, Boot: uint64(inc) + 1})
				if err != nil {
					panic(err)
				}
				return m
			}, ids...)
		chk := NewChecker()
		revoked := ""
		s.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
			if e, ok := ev.(LostEvent); ok && e.Reason == "revoked by the coordinator" {
				revoked = fmt.Sprintf("daemon %d's client lost %q: %s", id, e.Name, e.Reason)
			}
			return chk.Observe(id, ev)
		}
		s.Invariant = func() error { return Exclusive(s) }
		fail := func(err error) {
			t.Fatalf("%v\nreplay: %s", err, simtest.Replay(t, seed))
		}
		run := func(d time.Duration) {
			if err := s.RunFor(d); err != nil {
				fail(err)
			}
		}
		run(time.Second)
		coord := node.None
		for _, id := range ids {
			if m, ok := s.Machine(id).(*central); ok && m.leading {
				coord = id
			}
		}
		if coord == node.None {
			fail(fmt.Errorf("seed %d: no coordinator after 1 s", seed))
		}
		var rest []node.ID
		for _, id := range ids {
			if id != coord {
				rest = append(rest, id)
			}
		}
		// The holder is the daemon that will not take over (the lowest
		// survivor does), so the new coordinator knows of the hold only
		// from its report; the rival is the new coordinator or asks it.
		h, rival := rest[1], rest[0]
		if r.IntN(4) == 0 {
			h, rival = rest[0], rest[1]
		}
		s.Inject(h, Msg{Type: LocalAcquire, Name: "a", Client: 1})
		holds := func() bool {
			for _, hd := range s.Machine(h).(Machine).Holdings(s.LocalNow(h)) {
				if hd.Name == "a" {
					return true
				}
			}
			return false
		}
		for i := 0; i < 200 && !holds(); i++ {
			run(time.Millisecond)
		}
		if !holds() {
			fail(fmt.Errorf("seed %d: daemon %d's client got no grant", seed, h))
		}
		run(time.Duration(r.Int64N(int64(lease))))
		s.Crash(coord)
		run(time.Duration(r.Int64N(int64(lease / 2))))
		s.Inject(rival, Msg{Type: LocalAcquire, Name: "a", Client: 100})
		run(4 * lease)
		// The takeover adopts the reported holder: it never revokes the
		// hold (the holder may still lose it by its own lease running out
		// when the election takes longer than about a quarter lease).
		if revoked != "" {
			fail(fmt.Errorf("seed %d: %s after coordinator %d crashed", seed, revoked, coord))
		}
	}
	t.Logf("central: %d seeds passed (the coordinator crashes while another daemon's client holds, and is not revoked; a rival asks)", len(sim.Seeds()))
}
