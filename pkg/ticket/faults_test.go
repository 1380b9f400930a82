package ticket

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// faults is one §4 run: processes join, leave, crash, restart, pause and
// are cut off, over lossy, duplicating, reordering links and drifting
// clocks, with Theorem 4.1 checked at every step.
type faults struct {
	seed  uint64
	procs int
	n     int
	k     int
	bug   bug
	// storm: failures faster than exclusions, and splits of the group in
	// two for longer than the support window, beyond what the seed's model
	// promises to survive: every arc of a split ring loses its support
	// (doc.go, "Partitions"). The run checks safety only, not recovery.
	storm bool
	// window: Config.Window, the rounds one ALIVE vouches for (3 by
	// default; longer in a half of the runs, where the temporary
	// coordinator's wait is dominated by it).
	window int
	// stretch: Config.Stretch (1, or 3 in a half of the runs: pauses
	// raise the paused processes' local health); the stretched half runs
	// with a Config.Grant of 8 (grantFor).
	stretch int
}

type faultStats struct {
	taken, lent, excluded, reclaimed int
	ended                            bool
	maxSent, maxFrom                 int
	coverErr                         error // Lemma 3.1 after settling, when the pool lived
	crashes, pauses, cuts            int
}

// -ticket.trace prints a §4 run's events and faults (with -seed, to read
// a failure).
var traceFlag = flag.Bool("ticket.trace", false, "print the events and faults of each §4 simulator run")

const faultRound = 50 * time.Millisecond

func (c faults) run() (st faultStats, err error) {
	r := rand.New(rand.NewPCG(c.seed, 41))
	ids := make([]node.ID, c.procs)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	machines := map[node.ID]*Machine{}
	epochs := NewEpochChecker()
	audit := newAuditor(ids, machines, epochs)
	// HeldFirst: a resumed process may be handed its queued messages
	// before its first tick, as a real driver can.
	opts := sim.Options{Seed: c.seed, MinLatency: time.Millisecond, MaxLatency: time.Duration(2+r.IntN(15)) * time.Millisecond,
		Drop: r.Float64() * 0.1, Dup: r.Float64() * 0.05, HeldFirst: 0.5}
	s := sim.New[Msg](opts, Codec{}, func(id node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
		// Every other process is a contact, as ticketd's --join lists
		// every member.
		var contacts []node.ID
		for _, o := range ids {
			if o != id {
				contacts = append(contacts, o)
			}
		}
		cfg := Config{ID: id, Rand: rng, Contacts: contacts, FaultTolerant: true, K: c.k, Round: faultRound, Retry: 20 * time.Millisecond, Window: c.window, Stretch: c.stretch, Grant: grantFor(c.stretch), bug: c.bug}
		if id == 1 && machines[1] == nil {
			cfg.Tickets, cfg.Contacts = c.n, nil
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
		s.SetClock(id, time.Duration(r.Int64N(int64(time.Second))), float64(r.IntN(8001)-4000)) // ±0.4%
	}
	start0 := s.Now()
	faultsOn := true
	rejoin := func(id node.ID, after time.Duration) {
		s.At(s.Now().Add(after), func() {
			if st := machines[id].st; !faultsOn || !s.Alive(id) || st != stExcluded && st != stLeft {
				return
			}
			s.Crash(id) // a new incarnation joins afresh
			s.Restart(id)
			s.Inject(id, Msg{Type: MsgJoin})
		})
	}
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if *traceFlag {
			fmt.Printf("%v %d %v\n", at.Sub(start0), id, ev)
		}
		switch e := ev.(type) {
		case TakenEvent:
			return epochs.Observe(id, e)
		case ExcludedEvent:
			st.excluded++
			rejoin(id, 200*time.Millisecond)
		case ReclaimedEvent:
			st.reclaimed++
		}
		return nil
	}
	s.Invariant = audit.invariant
	// Clients: each member lends its ticket every 20–80 ms while it may
	// (ticketd's run), so that every epoch a command could see is checked.
	// One member is busy and lends up to 30 times at once: its epochs run
	// ahead of the mark the others have heard of, the case a reclaim's
	// jump of the mark is for (doc.go, "Fencing").
	// Their own stream of draws: the fault schedule stays as it was.
	lr := rand.New(rand.NewPCG(c.seed, 59))
	burst := map[node.ID]int{}
	for _, id := range ids {
		burst[id] = 1
	}
	burst[ids[lr.IntN(len(ids))]] = 30
	var lendErr error
	var lend func(id node.ID)
	lend = func(id node.ID) {
		for range 1 + lr.IntN(burst[id]) {
			if !s.Alive(id) || s.Paused(id) {
				break
			}
			e, ok := machines[id].Lend(s.LocalNow(id))
			if !ok {
				break
			}
			t, _, _ := machines[id].Ticket()
			if err := epochs.ObserveLend(id, t, e); err != nil && lendErr == nil {
				lendErr = err
			}
		}
		s.At(s.Now().Add(time.Duration(20+lr.IntN(60))*time.Millisecond), func() { lend(id) })
	}
	for _, id := range ids {
		s.At(s.Now().Add(time.Duration(20+lr.IntN(60))*time.Millisecond), func() { lend(id) })
	}
	if *traceFlag && len(sim.Seeds()) == 1 {
		s.Trace = func(l string) { fmt.Println(l) }
	}
	fail := func(err error) (faultStats, error) {
		return st, fmt.Errorf("seed %d (%d processes, %d tickets, k=%d, drop %.2f, dup %.2f): %v",
			c.seed, c.procs, c.n, c.k, opts.Drop, opts.Dup, err)
	}
	note := func(what string, id node.ID) {
		if *traceFlag {
			fmt.Printf("%v %d -- %s\n", s.Now().Sub(start0), id, what)
		}
	}
	s.Inject(1, Msg{Type: MsgJoin})
	for _, id := range ids[1:] {
		s.At(s.Now().Add(time.Duration(r.Int64N(int64(time.Second)))), func() { s.Inject(id, Msg{Type: MsgJoin}) })
	}
	// Failures, from 1.5 s to 7.5 s: one at a time, 1.2–2 s apart, so that
	// each is excluded before the next (the seed's model: at most k
	// failures among any 2k+1 neighbours before exclusion). A storm run
	// has them 150–600 ms apart and splits the group too: safety only.
	gap := func() time.Duration { return time.Duration(1200+r.IntN(800)) * time.Millisecond }
	if c.storm {
		gap = func() time.Duration { return time.Duration(150+r.IntN(450)) * time.Millisecond }
	}
	for at := 1500 * time.Millisecond; at < 7500*time.Millisecond; at += gap() {
		id := ids[r.IntN(len(ids))]
		start := s.Now().Add(at)
		switch f := r.IntN(8); {
		case f < 3: // crash, restart a while later
			st.crashes++
			back := time.Duration(500+r.IntN(1500)) * time.Millisecond
			s.At(start, func() { note("crash", id); s.Crash(id) })
			s.At(start.Add(back), func() {
				if !s.Alive(id) {
					s.Restart(id)
					s.Inject(id, Msg{Type: MsgJoin})
				}
			})
		case f < 5: // pause (SIGSTOP), past the window or not
			st.pauses++
			d := time.Duration(50+r.IntN(600)) * time.Millisecond
			s.At(start, func() { note("pause", id); s.Pause(id) })
			s.At(start.Add(d), func() { note("resume", id); s.Resume(id) })
		case f < 7 || !c.storm: // one process cut off
			st.cuts++
			d := time.Duration(50+r.IntN(800)) * time.Millisecond
			s.At(start, func() { note("isolate", id); s.Isolate(id) })
			s.At(start.Add(d), func() { note("heal", id); s.Heal() })
		default: // the group split in two
			st.cuts++
			d := time.Duration(200+r.IntN(800)) * time.Millisecond
			s.At(start, func() { s.RandomPartition(r) })
			s.At(start.Add(d), func() { s.Heal() })
		}
	}
	// Churn all along: voluntary leaves, and joins back.
	for at := 1200 * time.Millisecond; at < 7500*time.Millisecond; at += time.Duration(200+r.IntN(400)) * time.Millisecond {
		id := ids[r.IntN(len(ids))]
		s.At(s.Now().Add(at), func() { note("leave", id); s.Inject(id, Msg{Type: MsgLeave}) })
		rejoin(id, at+time.Duration(300+r.IntN(700))*time.Millisecond)
	}
	if err := s.RunFor(8 * time.Second); err != nil {
		return fail(err)
	}
	if lendErr != nil {
		return fail(lendErr)
	}
	// Faults stop: links heal, paused processes resume, crashed ones come
	// back; everything settles.
	faultsOn = false
	s.SetFaults(0, 0)
	s.Heal()
	for _, id := range ids {
		s.Resume(id)
	}
	if err := s.RunFor(2 * time.Second); err != nil {
		return fail(err)
	}
	for _, id := range ids {
		machines[id].ResetCounts()
	}
	if err := s.RunFor(4 * time.Second); err != nil {
		return fail(err)
	}
	if lendErr != nil {
		return fail(lendErr)
	}
	st.taken, st.lent = epochs.Taken, epochs.Lent
	live := map[node.ID]*Machine{}
	for _, id := range ids {
		if s.Alive(id) {
			live[id] = machines[id]
			cnt := machines[id].Counts()
			st.maxSent, st.maxFrom = max(st.maxSent, cnt.MaxAliveSent), max(st.maxFrom, cnt.MaxAliveFrom)
			if cnt.MaxAliveSent > 2*c.k+1 {
				return fail(fmt.Errorf("process %d sent %d ALIVEs in one round (2k+1 = %d)", id, cnt.MaxAliveSent, 2*c.k+1))
			}
		}
	}
	owners := 0
	for _, m := range live {
		if m.st == stCoordinator {
			owners++
		}
	}
	st.ended = owners == 0
	if !st.ended {
		st.coverErr = Covered(live, uint32(c.n))
	}
	if s.Stats.Rejected != 0 {
		return fail(fmt.Errorf("%d messages rejected", s.Stats.Rejected))
	}
	return st, nil
}

func faultCase(seed uint64, b bug) faults {
	r := rand.New(rand.NewPCG(seed, 43))
	return faults{seed: seed, procs: 4 + r.IntN(12), n: 4 + r.IntN(16), k: 1 + r.IntN(2), bug: b, storm: r.IntN(5) == 0,
		window: []int{3, 3, 5, 8}[r.IntN(4)], stretch: 1 + 2*int(seed%2)}
}

// TestSimFaults: §4 under crashes, restarts, pauses, cut-off members,
// splits, churn, loss, duplication, reordering and drifting clocks, with
// clients borrowing tickets all along; a resumed process is handed its
// queued messages before its first tick half the time (sim.HeldFirst).
// Asserted in every seed: Theorem 4.1 at every step (no ticket lies in the
// ranges of two processes that may act), epochs grow per ticket, taken or
// lent, no process sends more than 2k+1 ALIVEs a round, and the audit
// (audit_test.go) at every call and step. Reported, not yet asserted
// (doc.go, "Liveness"): how many pools survive, and how many of those
// have every ticket owned or coordinated once faults stop (Lemma 3.1).
func TestSimFaults(t *testing.T) {
	var tot faultStats
	ended, covered, lived := 0, 0, 0
	n := simtest.EverySeed(t, func(seed uint64) error {
		st, err := faultCase(seed, 0).run()
		if err != nil {
			return err
		}
		tot.taken += st.taken
		tot.lent += st.lent
		tot.excluded += st.excluded
		tot.reclaimed += st.reclaimed
		tot.crashes += st.crashes
		tot.pauses += st.pauses
		tot.cuts += st.cuts
		tot.maxFrom = max(tot.maxFrom, st.maxFrom)
		switch {
		case st.ended:
			ended++
		case st.coverErr == nil:
			lived++
			covered++
		default:
			lived++
		}
		return nil
	})
	t.Logf("%d seeds passed (Theorem 4.1 and the audit at every step): %d crashes, %d pauses, %d cut-offs; %d tickets taken, %d lent, %d exclusions, %d ranges reclaimed; most ALIVE senders heard in a round %d",
		n, tot.crashes, tot.pauses, tot.cuts, tot.taken, tot.lent, tot.excluded, tot.reclaimed, tot.maxFrom)
	t.Logf("liveness (reported): %d pools ended, %d lived; %d of those settled with every ticket owned or coordinated",
		ended, lived, covered)
}

// TestSimFaultsCatchesPlantedBugs: §4's rules each matter. Each planted
// bug runs in its own subtest (in parallel: the sweep is the simulator
// stage's longest) over seeds 1..200 (1..400 for one), stopping once it has been caught
// in enough seeds to show it is not a fluke.
func TestSimFaultsCatchesPlantedBugs(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator sweep: run without -race")
	}
	const enough = 3
	for _, b := range []struct {
		name  string
		bug   bug
		seeds int
	}{
		// Caught in 1 of the first 200 seeds (193) while vouches counted
		// the factor only; with vouches of Stretch windows the stretched
		// half excludes less, and the first catches are seeds 210 to 366.
		{"serve CJOIN while a temporary coordinator", bugServeWhileTemp, 400},
		{"acknowledge an exclusion but keep vouching", bugNoBan, 200},
		{"hand out excluded tickets after one round", bugShortTemp, 200},
		{"ban for what the voter granted, not Grant", bugBanOwnGrants, 200},
		// UPDATEs passed on at once (updateNow) are a millisecond apart:
		// a duplicate of the older one, taken after the newer, leaves the
		// successor an L its predecessor no longer counts (the audit).
		{"take an UPDATE overtaken by a newer one", bugTakeStaleUpdate, 200}} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			simtest.CatchSome(t, b.name, b.seeds, enough, func(seed uint64) error {
				_, err := faultCase(seed, b.bug).run()
				return err
			})
		})
	}
}

// grantFor is Config.Grant for a run: 8 where the run
// stretches (doc.go, "Busy hosts: a stall of the whole host"), none
// where it does not.
func grantFor(stretch int) int {
	if stretch > 1 {
		return 8
	}
	return 0
}
