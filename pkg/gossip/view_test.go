package gossip

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// viewRun is one run of PrCast over partial views: n members, each
// joining through one or two contacts among the members before it (as
// `--join` gives a member one address), so that the views start as a
// lopsided graph in which the last members are in no one's view. The
// shuffles must mix it in warm rounds; then members broadcast under loss
// while some crash.
type viewRun struct {
	seed     uint64
	n        int
	events   int
	drop     float64
	crashes  int
	warm     int  // rounds of shuffling before the first broadcast
	frozen   bool // planted bug: views never shuffled
	dropSelf bool // planted bug: a shuffle leaves out the sender's entry
}

type viewResult struct {
	reach ReachReport
	ttl   int
	view  int
	views error // CheckViews at the end
}

const viewPeriod = 100 * time.Millisecond

func (r viewRun) run() (viewResult, error) {
	rng := rand.New(rand.NewPCG(r.seed, 36))
	ids := make([]node.ID, r.n)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	size := ViewSize(r.n)
	machines := map[node.ID]*Machine{}
	opts := sim.Options{Seed: r.seed, MinLatency: time.Millisecond, MaxLatency: time.Duration(2+rng.IntN(20)) * time.Millisecond,
		Drop: r.drop, Dup: rng.Float64() * 0.05}
	contacts := map[node.ID][]node.ID{}
	for i, id := range ids {
		switch {
		case i == 0:
		case i < 3:
			contacts[id] = ids[:i]
		default:
			for range 1 + rng.IntN(2) {
				contacts[id] = append(contacts[id], ids[rng.IntN(i)])
			}
		}
	}
	s := sim.New[Msg](opts, Codec{Fam: wire.FamilyTicket}, func(id node.ID, _ int, mr *rand.Rand) node.Machine[Msg] {
		m, err := New(Config{ID: id, Peers: contacts[id], Rand: mr, View: size, frozenView: r.frozen, dropSelf: r.dropSelf})
		if err != nil {
			panic(err)
		}
		machines[id] = m
		return m
	}, ids...)
	chk := NewChecker()
	reach := NewReach()
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if d, ok := ev.(DeliverEvent); ok {
			reach.Deliver(at, id, d)
			return chk.Observe(id, d)
		}
		return nil
	}
	fail := func(err error) (viewResult, error) {
		return viewResult{}, fmt.Errorf("seed %d (%d members, view %d, %d events, drop %.2f, %d crashes): %v", r.seed, r.n, size, r.events, r.drop, r.crashes, err)
	}
	if err := s.RunFor(time.Duration(r.warm) * viewPeriod); err != nil {
		return fail(err)
	}
	crashed := map[node.ID]bool{}
	seqs := map[node.ID]uint64{}
	start := s.Now()
	span := time.Second
	for i := 0; i < r.events; i++ {
		at := start.Add(time.Duration(rng.Int64N(int64(span))))
		origin := ids[rng.IntN(len(ids))]
		payload := []byte(fmt.Sprintf("notice %d", i))
		s.At(at, func() {
			if crashed[origin] {
				return
			}
			seqs[origin]++
			chk.Broadcast(origin, seqs[origin], payload)
			reach.Broadcast(s.Now(), origin, seqs[origin])
			s.Inject(origin, Msg{Type: MsgBroadcast, Events: []Event{{Payload: payload}}})
		})
	}
	for i := 0; i < r.crashes; i++ {
		id := ids[rng.IntN(len(ids))]
		s.At(start.Add(time.Duration(rng.Int64N(int64(span)))), func() {
			crashed[id] = true
			s.Crash(id)
		})
	}
	ttl := machines[1].cfg.TTL
	// Run until the last broadcast is TTL rounds old.
	if err := s.RunFor(span + time.Duration(ttl+1)*viewPeriod); err != nil {
		return fail(err)
	}
	var live []node.ID
	views := map[node.ID][]ViewEntry{}
	for _, id := range ids {
		if !crashed[id] {
			live = append(live, id)
			views[id] = machines[id].View()
		}
	}
	return viewResult{reach: reach.Report(live, time.Duration(ttl)*viewPeriod), ttl: ttl, view: size, views: CheckViews(views, live)}, nil
}

// TestSimViews: PrCast over partial views of ViewSize(n) members, started
// from lopsided join contacts and mixed by shuffles, under loss up to 10%,
// duplication, reordering and crashes. The delivery PrCast owes the ticket
// protocol (every live member hears a notice within TTL rounds) must hold
// for 99.9% of (notice, member) pairs over all seeds, and the overlay
// check (everyone known by a live member, everyone knowing one) at the end
// of every run. The planted bugs (views never refreshed; a shuffle
// without its sender) are caught by the same checks.
func TestSimViews(t *testing.T) {
	seeds := sim.Seeds()
	if raceEnabled {
		seeds = seeds[:min(10, len(seeds))]
	}
	var events, full int
	var pairs, worst float64 = 0, 1
	var slowest time.Duration
	for _, seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 37))
		n := 16 + rng.IntN(100)
		r := viewRun{seed: seed, n: n, events: 1 + rng.IntN(30), drop: rng.Float64() * 0.1, crashes: rng.IntN(n/10 + 1), warm: 10}
		res, err := r.run()
		if err != nil {
			t.Fatalf("%v\nreplay: go test ./pkg/gossip -run TestSimViews -seed %d", err, seed)
		}
		if res.views != nil {
			t.Fatalf("seed %d (%d members, view %d): %v\nreplay: go test ./pkg/gossip -run TestSimViews -seed %d", seed, n, res.view, res.views, seed)
		}
		events += res.reach.Events
		full += res.reach.Full
		pairs += res.reach.Fraction * float64(res.reach.Events)
		worst = min(worst, res.reach.Worst)
		slowest = max(slowest, res.reach.Slowest)
	}
	frac := pairs / float64(max(events, 1))
	t.Logf("%d seeds: %d notices, %d reached every live member within TTL rounds; %.5f of (notice, live member) pairs; worst notice %.3f; slowest delivery %v",
		len(seeds), events, full, frac, worst, slowest)
	if frac < 0.999 {
		t.Errorf("only %.5f of (notice, live member) pairs delivered within TTL rounds", frac)
	}
}

// TestSimViewsPlantedBugs: views that are never refreshed leave members
// whose contacts crashed with no one to push to or pull from, and the
// delivery check (Reach) catches it; shuffles that leave out their
// sender's own entry leave late joiners in no one's view, which the
// overlay check (CheckViews) catches (their notices still arrive by their
// own pulls, so Reach alone does not).
func TestSimViewsPlantedBugs(t *testing.T) {
	for _, bug := range []string{"frozen", "dropSelf"} {
		caught, runs := 0, 10
		if raceEnabled {
			runs = 2
		}
		worst := 1.0
		for seed := uint64(1); seed <= uint64(runs); seed++ {
			r := viewRun{seed: seed, n: 120, events: 20, drop: 0.05, crashes: 10, warm: 10, frozen: bug == "frozen", dropSelf: bug == "dropSelf"}
			res, err := r.run()
			if err != nil {
				t.Fatal(err)
			}
			worst = min(worst, res.reach.Fraction)
			if bug == "frozen" && res.reach.Fraction < 0.999 || bug == "dropSelf" && res.views != nil {
				caught++
			}
		}
		t.Logf("planted bug %s caught in %d of %d runs (worst reach %.4f)", bug, caught, runs, worst)
		if caught < runs {
			t.Errorf("planted bug %s caught in only %d of %d runs", bug, caught, runs)
		}
	}
}

func TestCodecShuffle(t *testing.T) {
	c := Codec{Fam: wire.FamilyTicket}
	for _, m := range []Msg{
		{Type: MsgShuffle, View: []ViewEntry{{ID: 3, Age: 0}, {ID: 4294967295, Age: 200}}},
		{Type: MsgShuffleReply},
	} {
		typ, p, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Unmarshal(typ, p)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("%+v -> %+v, %v", m, got, err)
		}
	}
	typ, p, _ := c.Marshal(Msg{Type: MsgShuffle, View: []ViewEntry{{ID: 0}}})
	if _, err := c.Unmarshal(typ, p); err == nil {
		t.Fatal("a view entry for member 0 decoded")
	}
}
