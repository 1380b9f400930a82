package consensus

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/scenariotest"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// run is one consensus run in the simulator.
type run struct {
	verbose bool // log every message delivered, with its entries
	cfgs    map[node.ID]Config
	faulty  map[node.ID]bool // crashed by injection or Byzantine: not held to agreement
	decided map[node.ID]DecideEvent
	// undecided: the processes that ended without deciding (UndecidedEvent)
	undecided map[node.ID]UndecidedEvent
	at        map[node.ID]time.Time
	log       []string
	sim       *sim.Sim[Msg]
	// wrap, when set, may replace a process's machine (a traitor of a
	// coalition); nil from wrap keeps the machine.
	wrap func(node.ID, *Machine) node.Machine[Msg]
}

// logged records every message a machine receives, for transcripts.
type logged struct {
	*Machine
	r *run
}

func (l *logged) Step(now time.Time, in node.Envelope[Msg]) error {
	var parts []string
	for _, e := range in.Msg.Entries {
		label := labelKey(e.Label)
		if label == "" {
			label = "own"
		} else {
			label = "said(" + label + ")"
		}
		parts = append(parts, label+"="+e.Value)
	}
	l.r.log = append(l.r.log, fmt.Sprintf("+%v %d -> %d round %d: %s", l.r.sim.Now().Sub(epoch), in.From, in.To, in.Msg.Round, strings.Join(parts, " ")))
	return l.Machine.Step(now, in)
}

func (r *run) execute(seed uint64, opts sim.Options, horizon time.Duration) (*sim.Sim[Msg], error) {
	ids := make([]node.ID, 0, len(r.cfgs))
	for id := range r.cfgs {
		ids = append(ids, id)
	}
	r.decided, r.at = map[node.ID]DecideEvent{}, map[node.ID]time.Time{}
	r.undecided = map[node.ID]UndecidedEvent{}
	opts.Seed = seed
	opts.Start = epoch
	s := sim.New[Msg](opts, Codec{}, func(id node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
		cfg := r.cfgs[id]
		cfg.Rand = rng
		m, err := New(cfg)
		if err != nil {
			panic(err)
		}
		if r.wrap != nil {
			if w := r.wrap(id, m); w != nil {
				return w
			}
		}
		if r.verbose {
			return &logged{Machine: m, r: r}
		}
		return m
	}, ids...)
	r.sim = s
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		r.log = append(r.log, fmt.Sprintf("+%v %d: %v", at.Sub(epoch), id, ev))
		if d, ok := ev.(DecideEvent); ok {
			if _, twice := r.decided[id]; twice {
				return fmt.Errorf("decided twice")
			}
			r.decided[id], r.at[id] = d, at
		}
		if u, ok := ev.(UndecidedEvent); ok {
			r.undecided[id] = u
		}
		return nil
	}
	err := s.RunFor(horizon)
	return s, err
}

// check verifies agreement, validity and termination by round f+1 for the
// processes that are not faulty. Validity: with crash faults (byzantine
// false) a crashed process is still honest about its input, so the decision
// must be some process's input and, if every process started with v, v;
// with Byzantine faults, if every loyal process started with v, v.
func (r *run) check(f int, byzantine bool) error {
	var correct []node.ID
	inputs, all := map[string]bool{}, map[string]bool{}
	for id, c := range r.cfgs {
		all[c.Value] = true
		if !r.faulty[id] {
			correct = append(correct, id)
			inputs[c.Value] = true
		}
	}
	if !byzantine {
		inputs = all
	}
	slices.Sort(correct)
	var first *DecideEvent
	for _, id := range correct {
		d, ok := r.decided[id]
		if _, undecided := r.undecided[id]; !ok && undecided && r.round1Minority() {
			continue // allowed: see round1Minority
		}
		if !ok {
			return fmt.Errorf("termination: correct process %d never decided", id)
		}
		if d.Round != f+1 {
			return fmt.Errorf("termination: process %d decided in round %d, not f+1 = %d", id, d.Round, f+1)
		}
		if first == nil {
			first = &d
		} else if d.Value != first.Value {
			return fmt.Errorf("agreement: process %d decided %q, process %d decided %q", correct[0], first.Value, id, d.Value)
		}
	}
	if first != nil && len(inputs) == 1 && !inputs[first.Value] {
		return fmt.Errorf("validity: every process that counts started with %v but %q was decided", keys(inputs), first.Value)
	}
	if first != nil && !byzantine && !all[first.Value] {
		return fmt.Errorf("validity: %q was decided but no process started with it", first.Value)
	}
	return nil
}

// round1Minority: at least half the processes crash in round 1, so a
// correct process may hear no majority there and must not decide (doc.go).
func (r *run) round1Minority() bool {
	c1 := 0
	for _, c := range r.cfgs {
		if c.CrashRound == 1 {
			c1++
		}
	}
	return 2*c1 >= len(r.cfgs)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// floodRun builds a random FloodSet run: n processes, staggered starts,
// latency below the round length, and up to f crashes part-way through a
// broadcast. Half the seeds use random crashes; the other half the worst
// case: the process holding the minimum crashes in round 1 after reaching
// only its successor, which crashes in round 2 after reaching only its
// successor, and so on for f rounds. rounds overrides f+1 when non-zero.
func floodRun(seed uint64, rounds int) (*run, int, sim.Options) {
	rng := rand.New(rand.NewPCG(seed, 1))
	n := 3 + rng.IntN(6)
	f := 1 + rng.IntN(min(3, n-1))
	roundLen := 50 * time.Millisecond
	r := &run{cfgs: map[node.ID]Config{}, faulty: map[node.ID]bool{}}
	var ids []node.ID
	for i := 1; i <= n; i++ {
		ids = append(ids, node.ID(i))
	}
	chain := rng.IntN(2) == 0 || rounds != 0
	victims := rng.Perm(n)[:rng.IntN(f+1)]
	for i, id := range ids {
		cfg := Config{ID: id, Peers: ids, Algo: FloodSet, F: f, Value: strconv.Itoa(1 + rng.IntN(5)),
			Round: roundLen, Start: epoch.Add(time.Duration(rng.Int64N(int64(roundLen / 5)))), rounds: rounds}
		switch {
		case chain && i < f:
			cfg.CrashRound, cfg.CrashAfter = i+1, 1
			if i == 0 {
				cfg.Value = "0"
			}
			r.faulty[id] = true
		case !chain && slices.Contains(victims, i):
			cfg.CrashRound = 1 + rng.IntN(f+1)
			cfg.CrashAfter = rng.IntN(n)
			r.faulty[id] = true
		}
		r.cfgs[id] = cfg
	}
	return r, f, sim.Options{MinLatency: time.Millisecond, MaxLatency: time.Duration(2+rng.IntN(15)) * time.Millisecond}
}

func TestSimFloodSetProperties(t *testing.T) {
	for _, seed := range sim.Seeds() {
		r, f, opts := floodRun(seed, 0)
		if _, err := r.execute(seed, opts, time.Duration(f+3)*50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := r.check(f, false); err != nil {
			t.Fatalf("sim seed %d: %v\nreplay: %s\n%s",
				seed, err, simtest.Replay(t, seed), strings.Join(r.log, "\n"))
		}
	}
	t.Logf("floodset: %d seeds passed (n 3..8, f 1..3, up to f crashes mid-broadcast)", len(sim.Seeds()))
}

// TestSimFloodSetTooFewRoundsIsCaught is the negative control: FloodSet run
// for f rounds against f crashes must lose agreement on some seed.
func TestSimFloodSetTooFewRoundsIsCaught(t *testing.T) {
	simtest.Catch(t, "f rounds against f crashes", 500, func(seed uint64) error {
		r, f, opts := floodRun(seed, -1)
		for id, c := range r.cfgs {
			c.rounds = f
			r.cfgs[id] = c
		}
		r.execute(seed, opts, time.Duration(f+3)*50*time.Millisecond)
		// The run lasts f rounds, so termination is checked against f.
		return r.check(f-1, false)
	}, "agreement")
}

func eigRun(seed uint64, n, f int) (*run, sim.Options) {
	rng := rand.New(rand.NewPCG(seed, 2))
	roundLen := 50 * time.Millisecond
	r := &run{cfgs: map[node.ID]Config{}, faulty: map[node.ID]bool{}}
	var ids []node.ID
	for i := 1; i <= n; i++ {
		ids = append(ids, node.ID(i))
	}
	traitors := rng.Perm(n)[:rng.IntN(f+1)]
	same := rng.IntN(2) == 0 // half the runs: every loyal process starts with the same value
	for i, id := range ids {
		v := strconv.Itoa(rng.IntN(2))
		if same {
			v = "1"
		}
		cfg := Config{ID: id, Peers: ids, Algo: EIG, F: f, Value: v, Round: roundLen,
			Start: epoch.Add(time.Duration(rng.Int64N(int64(roundLen / 5)))), Lie: "0"}
		if slices.Contains(traitors, i) {
			cfg.Byzantine = Strategy(1 + rng.IntN(4))
			r.faulty[id] = true
		}
		r.cfgs[id] = cfg
	}
	return r, sim.Options{MinLatency: time.Millisecond, MaxLatency: time.Duration(2+rng.IntN(15)) * time.Millisecond}
}

func TestSimEIGProperties(t *testing.T) {
	for _, nf := range [][2]int{{4, 1}, {7, 2}} {
		n, f := nf[0], nf[1]
		for _, seed := range sim.Seeds() {
			r, opts := eigRun(seed, n, f)
			if _, err := r.execute(seed, opts, time.Duration(f+3)*50*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if err := r.check(f, true); err != nil {
				t.Fatalf("sim seed %d (n=%d f=%d): %v\nreplay: %s\n%s",
					seed, n, f, err, simtest.Replay(t, seed), strings.Join(r.log, "\n"))
			}
		}
		t.Logf("eig n=%d f=%d: %d seeds passed (up to f traitors: silent, random, two-faced, liar)", n, f, len(sim.Seeds()))
	}
}

// TestThreeGenerals is Schaffernicht, Topic V's Byzantine generals with n = 3, f = 1:
// loyal general 1 votes attack, loyal general 2 retreat, general 3 is a
// two-faced traitor. EIG cannot work with n ≤ 3f, and the checker must
// find the disagreement. The transcript is kept in testdata.
func TestThreeGenerals(t *testing.T) {
	ids := []node.ID{1, 2, 3}
	base := Config{Peers: ids, Algo: EIG, F: 1, Round: 50 * time.Millisecond, Start: epoch,
		Default: "retreat", Lie: "retreat", Unsafe: true}
	r := &run{cfgs: map[node.ID]Config{}, faulty: map[node.ID]bool{3: true}, verbose: true}
	for id, v := range map[node.ID]string{1: "attack", 2: "retreat", 3: "attack"} {
		c := base
		c.ID, c.Value = id, v
		if id == 3 {
			c.Byzantine = TwoFaced
		}
		r.cfgs[id] = c
	}
	if _, err := r.execute(1, sim.Options{MinLatency: time.Millisecond, MaxLatency: time.Millisecond}, time.Second); err != nil {
		t.Fatal(err)
	}
	err := r.check(1, true)
	if err == nil || !strings.Contains(err.Error(), "agreement") {
		t.Fatalf("the checker missed the three generals' disagreement: %v", err)
	}
	header := []string{
		"# Schaffernicht's three generals under EIG with n = 3, f = 1 (n ≤ 3f: run with --unsafe).",
		"# General 1 (loyal) votes attack, general 2 (loyal) votes retreat, general 3 is a",
		"# two-faced traitor: honest about its own vote, then it tells general 1 that everyone",
		"# said attack and general 2 that everyone said retreat. Silence and ties: retreat.",
		"# \"j -> i round 2: said(a)=v\" means: j tells i that a said v.",
	}
	transcript := strings.Join(append(append(header, r.log...), "checker: "+err.Error()), "\n") + "\n"
	scenariotest.Golden(t, filepath.Join("..", "..", "testdata", "three-generals.txt"), transcript)
	// The same traitor cannot split four generals.
	r4 := &run{cfgs: map[node.ID]Config{}, faulty: map[node.ID]bool{4: true}}
	ids4 := []node.ID{1, 2, 3, 4}
	for id, v := range map[node.ID]string{1: "attack", 2: "retreat", 3: "attack", 4: "attack"} {
		c := base
		c.Peers, c.Unsafe, c.ID, c.Value = ids4, false, id, v
		if id == 4 {
			c.Byzantine = TwoFaced
		}
		r4.cfgs[id] = c
	}
	r4.execute(1, sim.Options{MinLatency: time.Millisecond, MaxLatency: time.Millisecond}, time.Second)
	if err := r4.check(1, true); err != nil {
		t.Fatalf("n=4 f=1: %v", err)
	}
}

// TestMessageCounts measures FloodSet and EIG against Schaffernicht, Topic V's costs:
// FloodSet sends at most n(n−1)(f+1) messages; EIG sends as many messages
// but its volume (values carried) grows as O(n^(f+1)).
func TestMessageCounts(t *testing.T) {
	perm := func(a, b int) int { // a!/(a−b)!
		p := 1
		for i := 0; i < b; i++ {
			p *= a - i
		}
		return p
	}
	for _, c := range []struct {
		algo Algo
		n, f int
	}{
		{FloodSet, 4, 1}, {FloodSet, 7, 2}, {FloodSet, 10, 3},
		{EIG, 4, 1}, {EIG, 7, 2}, {EIG, 10, 3},
	} {
		r := &run{cfgs: map[node.ID]Config{}, faulty: map[node.ID]bool{}}
		var ids []node.ID
		for i := 1; i <= c.n; i++ {
			ids = append(ids, node.ID(i))
		}
		for _, id := range ids {
			r.cfgs[id] = Config{ID: id, Peers: ids, Algo: c.algo, F: c.f, Value: strconv.Itoa(int(id) % 2), Start: epoch}
		}
		s, err := r.execute(1, sim.Options{MinLatency: time.Millisecond, MaxLatency: time.Millisecond}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.check(c.f, c.algo == EIG); err != nil {
			t.Fatal(err)
		}
		msgs, values := 0, 0
		for _, d := range r.decided {
			msgs += d.Messages
			values += d.Values
		}
		_ = s
		bound := c.n * (c.n - 1) * (c.f + 1)
		if msgs > bound {
			t.Errorf("%v n=%d f=%d: %d messages exceed n(n-1)(f+1) = %d", c.algo, c.n, c.f, msgs, bound)
		}
		if c.algo == EIG {
			// Each process sends, in round k, one value per label of
			// length k−1 without itself: (n−1)!/(n−k)! of them.
			want := 0
			for k := 1; k <= c.f+1; k++ {
				want += c.n * (c.n - 1) * perm(c.n-1, k-1)
			}
			if values != want {
				t.Errorf("EIG n=%d f=%d: %d values sent, want %d", c.n, c.f, values, want)
			}
			t.Logf("%-8v n=%-2d f=%d: %4d messages (bound n(n-1)(f+1) = %4d), %6d values (n(n-1)·Σ(n-1)!/(n-k)! = %6d), tree %d",
				c.algo, c.n, c.f, msgs, bound, values, want, r.decided[1].TreeSize)
		} else {
			if msgs != bound {
				t.Errorf("FloodSet without crashes sends exactly n(n-1)(f+1) = %d, got %d", bound, msgs)
			}
			t.Logf("%-8v n=%-2d f=%d: %4d messages (bound n(n-1)(f+1) = %4d)", c.algo, c.n, c.f, msgs, bound)
		}
	}
}
