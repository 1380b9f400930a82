package gossip

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

type run struct {
	seed    uint64
	n       int
	events  int
	drop    float64
	crashes int
	noDedup bool
	noPull  bool
	tree    bool
	buffer  int  // Config.Buffer (0: the default)
	forget  bool // the planted bug forgetDropped
}

type result struct {
	pushesPerRound float64 // per process, while broadcasting
	fanout         int
	settledRounds  int // rounds after the last broadcast until everyone had everything
	delivered      int
	dropped        uint64 // events cut from full push buffers
}

func (r run) go_() (result, error) {
	rng := rand.New(rand.NewPCG(r.seed, 21))
	ids := make([]node.ID, r.n)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	machines := map[node.ID]*Machine{}
	opts := sim.Options{Seed: r.seed, MinLatency: time.Millisecond, MaxLatency: time.Duration(2+rng.IntN(20)) * time.Millisecond,
		Drop: r.drop, Dup: rng.Float64() * 0.05}
	s := sim.New[Msg](opts, Codec{Fam: wire.FamilyMcast}, func(id node.ID, _ int, mr *rand.Rand) node.Machine[Msg] {
		m, err := New(Config{ID: id, Peers: ids, Rand: mr, noDedup: r.noDedup, noPull: r.noPull, Tree: r.tree, Buffer: r.buffer, forgetDropped: r.forget})
		if err != nil {
			panic(err)
		}
		machines[id] = m
		return m
	}, ids...)
	chk := NewChecker()
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if d, ok := ev.(DeliverEvent); ok {
			return chk.Observe(id, d)
		}
		return nil
	}
	fail := func(err error) (result, error) {
		return result{}, fmt.Errorf("seed %d (%d processes, %d events, drop %.2f, %d crashes, tree %v): %v", r.seed, r.n, r.events, r.drop, r.crashes, r.tree, err)
	}
	crashed := map[node.ID]bool{}
	seqs := map[node.ID]uint64{}
	start := s.Now()
	for i := 0; i < r.events; i++ {
		at := time.Duration(rng.Int64N(int64(2 * time.Second)))
		origin := ids[rng.IntN(len(ids))]
		payload := []byte(fmt.Sprintf("event %d", i))
		s.At(start.Add(at), func() {
			if crashed[origin] {
				return
			}
			seqs[origin]++
			chk.Broadcast(origin, seqs[origin], payload)
			s.Inject(origin, Msg{Type: MsgBroadcast, Events: []Event{{Payload: payload}}})
		})
	}
	for i := 0; i < r.crashes; i++ {
		id := ids[rng.IntN(len(ids))]
		s.At(start.Add(time.Duration(rng.Int64N(int64(2*time.Second)))), func() {
			crashed[id] = true
			s.Crash(id)
		})
	}
	if err := s.RunFor(2 * time.Second); err != nil {
		return fail(err)
	}
	var pushes uint64
	for _, m := range machines {
		pushes += m.stats["pushed"]
	}
	res := result{pushesPerRound: float64(pushes) / float64(r.n) / 20, fanout: machines[1].cfg.Fanout}
	for _, m := range machines {
		res.dropped += m.stats["dropped"]
	}
	var correct []node.ID
	for _, id := range ids {
		if !crashed[id] {
			correct = append(correct, id)
		}
	}
	s.SetFaults(0, 0)
	for round := 1; round <= 60; round++ {
		if err := s.RunFor(100 * time.Millisecond); err != nil {
			return fail(err)
		}
		if len(chk.Missing(correct)) == 0 {
			res.settledRounds, res.delivered = round, chk.Deliveries
			return res, nil
		}
	}
	missing := chk.Missing(correct)
	return fail(fmt.Errorf("agreement: 6 s after the last broadcast, %d processes miss events: %s", len(missing), strings.Join(missing[:min(3, len(missing))], "; ")))
}

// TestSimGossip: integrity at every delivery, and agreement and validity
// among the processes that did not crash once the loss stops, over many
// seeds with loss up to 30%, duplication, reordering and crashes; every
// other seed spreads along the tree (Config.Tree).
func TestSimGossip(t *testing.T) {
	worst, worstSeed := 0, uint64(0)
	var pushes float64
	for _, seed := range sim.Seeds() {
		rng := rand.New(rand.NewPCG(seed, 3))
		r := run{seed: seed, n: 3 + rng.IntN(60), events: 1 + rng.IntN(60), drop: rng.Float64() * 0.3, crashes: rng.IntN(3), tree: seed%2 == 0}
		res, err := r.go_()
		if err != nil {
			t.Fatalf("%v\nreplay: %s", err, simtest.Replay(t, seed))
		}
		if res.settledRounds > worst {
			worst, worstSeed = res.settledRounds, seed
		}
		if !r.tree && res.pushesPerRound > float64(res.fanout) {
			t.Fatalf("seed %d: %.2f pushes per process per round, fanout %d", seed, res.pushesPerRound, res.fanout)
		}
		pushes = max(pushes, res.pushesPerRound)
	}
	t.Logf("%d seeds passed; slowest: every correct process had every event %d rounds after the loss stopped (seed %d); at most %.2f pushes per process per round",
		len(sim.Seeds()), worst, worstSeed, pushes)
}

// TestSimBufferFull drives the push buffer past its bound: 400 events in
// 2 s through buffers of 16 (doc.go "Bounds and drop policy": the events
// that spread the most are cut, counted as dropped), under loss; every
// run must drop, and agreement must still hold once the loss stops, by
// repair from the history. The planted bug forgets what it cuts, and
// agreement fails.
func TestSimBufferFull(t *testing.T) {
	seeds := sim.Seeds()
	seeds = seeds[:min(200, len(seeds))]
	var dropped uint64
	for _, seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 5))
		r := run{seed: seed, n: 5 + rng.IntN(20), events: 400, drop: rng.Float64() * 0.2, buffer: 16}
		res, err := r.go_()
		if err != nil {
			t.Fatalf("%v\nreplay: %s", err, simtest.Replay(t, seed))
		}
		if res.dropped == 0 {
			t.Fatalf("seed %d: the push buffers never filled", seed)
		}
		dropped += res.dropped
	}
	caught := 0
	for _, seed := range seeds[:min(50, len(seeds))] {
		rng := rand.New(rand.NewPCG(seed, 5))
		r := run{seed: seed, n: 5 + rng.IntN(20), events: 400, drop: rng.Float64() * 0.2, buffer: 16, forget: true}
		if _, err := r.go_(); err != nil {
			caught++
		}
	}
	t.Logf("%d seeds passed with full buffers (%d events cut from pushes in all, each still delivered everywhere); planted bug (cut means forgotten) caught in %d of %d",
		len(seeds), dropped, caught, min(50, len(seeds)))
	if caught == 0 {
		t.Error("planted bug (an event cut from the push buffer is forgotten) never caught")
	}
}

// TestThousandProcesses: 1,000 processes, 10% loss, 50 broadcasts, at random
// and along the tree.
func TestThousandProcesses(t *testing.T) {
	for _, tree := range []bool{false, true} {
		res, err := run{seed: 1, n: 1000, events: 50, drop: 0.1, tree: tree}.go_()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("1,000 processes, tree %v: every process had all 50 events %d rounds after the last broadcast; %.2f pushes per process per round; %d deliveries",
			tree, res.settledRounds, res.pushesPerRound, res.delivered)
	}
}

// TestSimCatchesPlantedBugs: delivering duplicates is caught by integrity;
// without the pull, heavy loss leaves processes without events, which the
// agreement check reports.
func TestSimCatchesPlantedBugs(t *testing.T) {
	simtest.Catch(t, "delivering every copy", 20, func(seed uint64) error {
		_, err := (run{seed: seed, n: 20, events: 20, drop: 0.1, noDedup: true}).go_()
		return err
	}, "twice")
	// Push alone under 50% loss must miss an event, or the agreement check
	// sees nothing.
	simtest.Catch(t, "push alone at 50% loss", 20, func(seed uint64) error {
		_, err := (run{seed: seed, n: 20, events: 20, drop: 0.5, noPull: true}).go_()
		return err
	}, "agreement")
}

// glomers runs the Gossip Glomers 3d/3e workload: 25 members, 100 ms
// one-way latency, 100 operations per second for secs seconds, half of them
// broadcasts at random members and half reads (local, no messages). With
// nemesis, random partitions come and go during the first half. It
// reports messages per operation as Maelstrom counts them (messages between
// members ÷ all client operations, reads included) and the stable latency
// of each broadcast (from the broadcast to the last member having it).
func glomers(t *testing.T, cfg Config, secs int, nemesis bool) (msgsPerOp float64, median, worst time.Duration) {
	t.Helper()
	const n = 25
	ids := make([]node.ID, n)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	s := sim.New[Msg](sim.Options{Seed: 7, MinLatency: 100 * time.Millisecond, MaxLatency: 100 * time.Millisecond},
		Codec{Fam: wire.FamilyMcast}, func(id node.ID, _ int, r *rand.Rand) node.Machine[Msg] {
			c := cfg
			c.ID, c.Peers, c.Rand = id, ids, r
			m, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}, ids...)
	type key2 struct {
		o node.ID
		s uint64
	}
	sent := map[key2]time.Time{}
	have := map[key2]int{}
	var lat []time.Duration
	msgs := 0 // messages sent when the last broadcast reached everyone
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if d, ok := ev.(DeliverEvent); ok {
			k := key2{d.Origin, d.Seq}
			have[k]++
			if have[k] == n {
				lat = append(lat, at.Sub(sent[k]))
				msgs = 0
				for _, v := range s.Stats.Sent {
					msgs += v
				}
			}
		}
		return nil
	}
	r := rand.New(rand.NewPCG(7, 7))
	seqs := map[node.ID]uint64{}
	start := s.Now()
	ops := 0
	for i := 0; i < 100*secs; i++ {
		at := start.Add(time.Duration(i) * 10 * time.Millisecond)
		ops++
		if i%2 == 1 {
			continue // a read: answered locally
		}
		origin := ids[r.IntN(n)]
		s.At(at, func() {
			seqs[origin]++
			sent[key2{origin, seqs[origin]}] = s.Now()
			s.Inject(origin, Msg{Type: MsgBroadcast, Events: []Event{{Payload: []byte("x")}}})
		})
	}
	if nemesis {
		for k := 0; k < secs/2; k += 2 {
			s.At(start.Add(time.Duration(k)*time.Second), func() { s.RandomPartition(r) })
			s.At(start.Add(time.Duration(k)*time.Second+time.Second), func() { s.Heal() })
		}
	}
	if err := s.RunFor(time.Duration(secs)*time.Second + 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if len(lat) != len(sent) {
		t.Fatalf("%d of %d broadcasts reached every member", len(lat), len(sent))
	}
	// Messages count until the last broadcast reached every member; the
	// 10 s tail is only there to be sure none is missing.
	slices.Sort(lat)
	return float64(msgs) / float64(ops), lat[len(lat)/2], lat[len(lat)-1]
}

// TestGlomersWorkload reports the Gossip Glomers 3d/3e numbers for the
// default configuration and for the one documented for low traffic
// (fanout 4, period 200 ms), with and without partitions. Every broadcast
// must reach every member; the numbers are logged, not asserted
// (benchmarks, not timed tests).
func TestGlomersWorkload(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"defaults", Config{}},
		{"fanout 4, period 200ms", Config{Fanout: 4, Period: 200 * time.Millisecond}},
		{"tree", Config{Tree: true}},
		{"tree, period 50ms", Config{Tree: true, Period: 50 * time.Millisecond}},
	} {
		for _, nemesis := range []bool{false, true} {
			per, med, worst := glomers(t, c.cfg, 20, nemesis)
			t.Logf("%s, partitions %v: %.1f messages per operation, stable latency median %v, max %v",
				c.name, nemesis, per, med.Round(time.Millisecond), worst.Round(time.Millisecond))
		}
	}
}
