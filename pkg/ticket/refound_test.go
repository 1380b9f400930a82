package ticket

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// refounds is a run in which the pool ends again and again and is founded
// again: every member stalls at once past the support window (SIGSTOP of
// every member, a paused VM host), members crash and restart with or
// without their state file, are cut off, and the group splits. Clients
// take tickets all along (Lend). Each member is modelled as ticketd runs
// it: one Machine at a time, its mark (the highest epoch it knows) kept
// across its Machines, and on disk when it has a state file; a refound is
// DecideRefound on the answers of the members that can answer, an
// instant decision: TestSimEpochsCatchFloorZero's model of the rule
// (TestSimEpochsAcrossRefounds runs the probes as messages).
type refounds struct {
	seed  uint64
	procs int
	n     int
	k     int
	bug   bug
	// forget models a member that keeps no mark across its Machines (a
	// refounded pool then starts from what its current Machines know).
	forget bool
}

type refoundStats struct {
	taken, lent, founded, stalls, crashes, cuts int
}

func (c refounds) run() (st refoundStats, err error) {
	r := rand.New(rand.NewPCG(c.seed, 47))
	ids := make([]node.ID, c.procs)
	durable := map[node.ID]bool{}
	for i := range ids {
		ids[i] = node.ID(i + 1)
		durable[ids[i]] = r.IntN(3) > 0
	}
	durable[ids[r.IntN(len(ids))]] = true // somebody can found
	machines := map[node.ID]*Machine{}
	mark := map[node.ID]uint64{}  // the member's mark, kept across its Machines
	found := map[node.ID]uint64{} // the floor a founder's next Machine starts above
	epochs := NewEpochChecker()
	audit := newAuditor(ids, machines, epochs)
	opts := sim.Options{Seed: c.seed, MinLatency: time.Millisecond, MaxLatency: time.Duration(2+r.IntN(10)) * time.Millisecond,
		Drop: r.Float64() * 0.05, Dup: r.Float64() * 0.05, HeldFirst: 0.5}
	s := sim.New[Msg](opts, Codec{}, func(id node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
		var contacts []node.ID
		for _, o := range ids {
			if o != id {
				contacts = append(contacts, o)
			}
		}
		cfg := Config{ID: id, Rand: rng, Contacts: contacts, FaultTolerant: true, K: c.k, Round: faultRound, Retry: 20 * time.Millisecond, bug: c.bug}
		if !c.forget {
			cfg.Floor = mark[id]
		}
		if f, ok := found[id]; ok || id == 1 && machines[1] == nil {
			cfg.Tickets, cfg.Contacts, cfg.Floor = c.n, nil, max(cfg.Floor, f)
			delete(found, id)
		}
		m, err := New(cfg)
		if err != nil {
			panic(err)
		}
		machines[id] = m
		return audit.wrap(m)
	}, ids...)
	audit.s = s
	for _, id := range ids {
		s.SetClock(id, time.Duration(r.Int64N(int64(time.Second))), float64(r.IntN(4001)-2000))
	}
	s.Invariant = audit.invariant
	// memo: what the member keeps of its Machine's mark.
	memo := func(id node.ID) uint64 {
		if c.forget {
			return machines[id].Floor()
		}
		mark[id] = max(mark[id], machines[id].Floor())
		return mark[id]
	}
	// renew replaces a member's Machine by a new one (a join after an
	// exclusion, or a founder's), keeping its mark.
	renew := func(id node.ID, join bool) {
		memo(id)
		s.Crash(id)
		s.Restart(id)
		if join {
			s.Inject(id, Msg{Type: MsgJoin})
		}
	}
	s.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
		switch e := ev.(type) {
		case TakenEvent:
			return epochs.Observe(id, e)
		case ExcludedEvent:
			s.At(s.Now().Add(100*time.Millisecond), func() {
				if s.Alive(id) && !s.Paused(id) && machines[id].Done() {
					renew(id, true)
				}
			})
		}
		return nil
	}
	fail := func(err error) (refoundStats, error) {
		return st, fmt.Errorf("seed %d (%d processes, %d tickets, k=%d): %v", c.seed, c.procs, c.n, c.k, err)
	}
	var lendErr error
	// Clients: each member lends its ticket every 20–80 ms while it may.
	var lend func(id node.ID)
	lend = func(id node.ID) {
		if s.Alive(id) && !s.Paused(id) {
			if e, ok := machines[id].Lend(s.LocalNow(id)); ok {
				t, _, _ := machines[id].Ticket()
				if err := epochs.ObserveLend(id, t, e); err != nil && lendErr == nil {
					lendErr = err
				}
			}
		}
		s.At(s.Now().Add(time.Duration(20+r.IntN(60))*time.Millisecond), func() { lend(id) })
	}
	// cut: members that cannot answer a probe from a given member.
	cutOff := map[node.ID]bool{}
	var side []node.ID // one side of a split, nil when whole
	reach := func(a, b node.ID) bool {
		if cutOff[a] || cutOff[b] {
			return false
		}
		if side == nil {
			return true
		}
		in := func(x node.ID) bool {
			for _, y := range side {
				if y == x {
					return true
				}
			}
			return false
		}
		return in(a) == in(b)
	}
	out := func(id node.ID) bool {
		switch machines[id].st {
		case stIdle, stJoining, stLeft, stExcluded:
			return true
		}
		return false
	}
	// Refound probes: every 200 ms each durable member that is out asks
	// every other member (an instant here: answers are what each one
	// would say now; one that is crashed, stopped or cut off is silent).
	var probe func()
	probe = func() {
		for _, p := range ids {
			if !s.Alive(p) || s.Paused(p) || !out(p) {
				continue
			}
			answers := map[node.ID]ProbeAnswer{}
			var asked []node.ID
			for _, q := range ids {
				if q == p {
					continue
				}
				asked = append(asked, q)
				if s.Alive(q) && !s.Paused(q) && reach(p, q) {
					answers[q] = ProbeAnswer{Out: out(q), Floor: memo(q), Durable: durable[q]}
				}
			}
			d := DecideRefound(p, memo(p), durable[p], asked, answers)
			if !d.Found {
				continue
			}
			st.founded++
			found[p] = d.Floor
			if !c.forget {
				mark[p] = max(mark[p], d.Floor)
			}
			renew(p, true)
			for _, q := range ids { // the others join the new pool
				if q != p && s.Alive(q) && !s.Paused(q) && machines[q].st != stJoining {
					renew(q, true)
				}
			}
			break
		}
		s.At(s.Now().Add(200*time.Millisecond), probe)
	}
	s.Inject(1, Msg{Type: MsgJoin})
	for _, id := range ids {
		if id != 1 {
			s.At(s.Now().Add(time.Duration(r.Int64N(int64(500*time.Millisecond)))), func() { s.Inject(id, Msg{Type: MsgJoin}) })
		}
		s.At(s.Now().Add(300*time.Millisecond), func() { lend(id) })
	}
	s.At(s.Now().Add(time.Second), probe)
	// Faults from 1.5 s to 9 s, 0.8–2 s apart.
	for at := 1500 * time.Millisecond; at < 9*time.Second; at += time.Duration(800+r.IntN(1200)) * time.Millisecond {
		start := s.Now().Add(at)
		id := ids[r.IntN(len(ids))]
		switch f := r.IntN(10); {
		case f < 4: // every member stalls at once, past the window or not
			st.stalls++
			d := time.Duration(100+r.IntN(900)) * time.Millisecond
			s.At(start, func() {
				for _, x := range ids {
					s.Pause(x)
				}
			})
			s.At(start.Add(d), func() {
				for _, x := range r.Perm(len(ids)) {
					s.Resume(ids[x])
				}
			})
		case f < 7: // a crash; back a while later, with its state file or without one
			st.crashes++
			s.At(start, func() {
				if s.Alive(id) {
					memo(id)
					s.Crash(id)
				}
			})
			s.At(start.Add(time.Duration(200+r.IntN(800))*time.Millisecond), func() {
				if !s.Alive(id) {
					if !durable[id] {
						mark[id] = 0 // no state file: the mark is gone
					}
					s.Restart(id)
					s.Inject(id, Msg{Type: MsgJoin})
				}
			})
		case f < 9: // one member cut off
			st.cuts++
			s.At(start, func() { cutOff[id] = true; s.Isolate(id) })
			s.At(start.Add(time.Duration(100+r.IntN(600))*time.Millisecond), func() { clear(cutOff); side = nil; s.Heal() })
		default: // the group split in two
			st.cuts++
			s.At(start, func() {
				side = nil
				for _, x := range ids {
					if r.IntN(2) == 0 {
						side = append(side, x)
					}
				}
				if len(side) == 0 {
					side = ids[:1]
				}
				var other []node.ID
				for _, x := range ids {
					if !reachSide(side, x) {
						other = append(other, x)
					}
				}
				s.Partition(side, other)
			})
			s.At(start.Add(time.Duration(100+r.IntN(600))*time.Millisecond), func() { clear(cutOff); side = nil; s.Heal() })
		}
	}
	if err := s.RunFor(11 * time.Second); err != nil {
		return fail(err)
	}
	if lendErr != nil {
		return fail(lendErr)
	}
	if s.Stats.Rejected != 0 {
		return fail(fmt.Errorf("%d messages rejected", s.Stats.Rejected))
	}
	st.taken, st.lent = epochs.Taken, epochs.Lent
	return st, nil
}

func reachSide(side []node.ID, x node.ID) bool {
	for _, y := range side {
		if y == x {
			return true
		}
	}
	return false
}

func refoundCase(seed uint64, b bug, forget bool) refounds {
	r := rand.New(rand.NewPCG(seed, 53))
	return refounds{seed: seed, procs: 3 + r.IntN(4), n: 2 + r.IntN(6), k: 1, bug: b, forget: forget}
}

// TestSimEpochsAcrossRefounds: fencing numbers are never repeated and
// never lower, for any ticket, over whole runs in which every member
// stalls at once (the pool ends and is founded again), members crash and
// restart with and without state files, are cut off and split apart, and
// clients take tickets all along. The refounds are decided by the
// members' probes and answers, messages the simulator delays, drops,
// duplicates and reorders (exchange.run); every other seed runs the
// majority refound (Config.Quorum). EpochChecker sees every epoch a
// process took and every epoch lent to a client, and a new Machine that
// forgets its member's mark (bugFloorZero) must be caught.
func TestSimEpochsAcrossRefounds(t *testing.T) {
	var all, quorum exchangeStats
	for _, seed := range sim.Seeds() {
		x := exchange{split: true, quorum: seed%2 == 0, stats: &all}
		if x.quorum {
			x.stats = &quorum
		}
		if _, err := x.run(seed, 0); err != nil {
			t.Fatalf("%v\nreplay: go test ./pkg/ticket -run TestSimEpochsAcrossRefounds -seed %d", err, seed)
		}
	}
	t.Logf("%d seeds: %d pools founded again by every member's answer, %d by a majority; %d tickets taken, %d lent, every epoch new and rising",
		len(sim.Seeds()), all.refounds, quorum.refounds, all.taken+quorum.taken, all.lent+quorum.lent)
	if all.refounds == 0 || quorum.refounds == 0 {
		t.Fatal("no pool was founded again: the runs do not test what they claim")
	}
	caught := 0
	for seed := uint64(1); seed <= 20; seed++ {
		if _, err := (exchange{split: true, quorum: seed%2 == 0}).run(seed, bugFloorZero); err != nil {
			caught++
		}
	}
	if caught == 0 {
		t.Fatal("a refounded pool starting from floor 0 went uncaught in 20 runs")
	}
	t.Logf("floor-0 bug caught in %d of 20 runs", caught)
}

// TestSimEpochsCatchFloorZero: a pool founded again from floor 0 (the
// founder's Machine forgets its member's mark), or members that keep no
// mark across their Machines, hand a (ticket, epoch) out twice.
func TestSimEpochsCatchFloorZero(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator sweep: run without -race")
	}
	for _, b := range []struct {
		name   string
		bug    bug
		forget bool
	}{{"a new Machine starts from floor 0", bugFloorZero, false},
		{"a member keeps no mark across its Machines", 0, true}} {
		caught := 0
		var first error
		for seed := uint64(1); seed <= 100; seed++ {
			if _, err := refoundCase(seed, b.bug, b.forget).run(); err != nil {
				caught++
				if first == nil {
					first = err
				}
			}
		}
		if caught == 0 {
			t.Errorf("planted bug %q never caught in 100 seeds", b.name)
		} else {
			t.Logf("planted bug %q caught in %d/100 seeds, e.g. %v", b.name, caught, first)
		}
	}
}

// TestDecideRefound: the rule's cases one by one.
func TestDecideRefound(t *testing.T) {
	out := func(floor uint64, durable bool) ProbeAnswer {
		return ProbeAnswer{Out: true, Floor: floor, Durable: durable}
	}
	asked := []node.ID{1, 3, 4}
	for _, tc := range []struct {
		name     string
		self     node.ID
		own      uint64
		durable  bool
		answers  map[node.ID]ProbeAnswer
		found    bool
		floor    uint64
		blocking []node.ID
	}{
		{"every member out: above the highest mark", 2, 7, true,
			map[node.ID]ProbeAnswer{1: out(5, false), 3: out(1<<40, true), 4: out(0, false)}, true, 1<<40 + RefoundJump, nil},
		{"its own mark counts", 2, 1 << 50, true,
			map[node.ID]ProbeAnswer{1: out(5, false), 3: out(9, true), 4: out(0, false)}, true, 1<<50 + RefoundJump, nil},
		{"silent members block, and are named", 2, 0, true,
			map[node.ID]ProbeAnswer{3: out(9, true)}, false, 0, []node.ID{1, 4}},
		{"a member in the core", 2, 0, true,
			map[node.ID]ProbeAnswer{1: out(0, false), 3: {Out: false}, 4: out(0, false)}, false, 0, nil},
		{"a lower member with a state file founds instead", 2, 0, true,
			map[node.ID]ProbeAnswer{1: out(0, true), 3: out(0, true), 4: out(0, false)}, false, 0, []node.ID{1}},
		{"no state file: never founds", 2, 0, false,
			map[node.ID]ProbeAnswer{1: out(0, false), 3: out(0, true), 4: out(0, false)}, false, 0, nil},
		{"an answer names a member not asked", 2, 0, true,
			map[node.ID]ProbeAnswer{1: out(0, false), 3: {Out: true, Members: []node.ID{9}}, 4: out(0, false)}, false, 0, []node.ID{9}},
		{"an excluded member probed too and out: its mark counts", 2, 0, true,
			map[node.ID]ProbeAnswer{1: out(0, false), 3: out(0, true), 4: out(0, false), 7: out(1<<45, false)}, true, 1<<45 + RefoundJump, nil},
		{"an excluded member probed too and in the core again", 2, 0, true,
			map[node.ID]ProbeAnswer{1: out(0, false), 3: out(0, true), 4: out(0, false), 7: {Out: false}}, false, 0, []node.ID{7}},
	} {
		r := DecideRefound(tc.self, tc.own, tc.durable, asked, tc.answers)
		if r.Found != tc.found || r.Floor != tc.floor || fmt.Sprint(r.Blocking) != fmt.Sprint(tc.blocking) {
			t.Errorf("%s: got found %v floor %d blocking %v (%s), want %v %d %v", tc.name, r.Found, r.Floor, r.Blocking, r.Why, tc.found, tc.floor, tc.blocking)
		}
	}
}
