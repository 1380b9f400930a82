package consensus

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// A coalition is the strongest adversary the unsigned model allows: its
// members (the f faulty processes) share everything they receive at once
// (collusion), and each chooses what to send per recipient, per round and
// per entry from what the coalition has seen. It cannot speak for a loyal
// process: the transport authenticates the sender, so every lie is about
// what someone said (Schaffernicht, Topic V: "n3 says that n2 said that n1
// said v1"), never a forged message.
//
// Tactics, one per run (mixed: one per traitor, round and recipient):
//
//	split     the loyal processes are cut into two groups once per run;
//	          every traitor tells group A that everyone said a and group
//	          B that everyone said b, where a and b are the two loyal
//	          inputs seen most often
//	contrary  each loyal recipient is told, about everyone, a seen value
//	          other than its own input: pushes each one away from itself
//	frame     relay honestly, except that what a loyal process said is
//	          reported as some other seen value, chosen per recipient:
//	          makes loyal processes look two-faced
//	mirror    tell each loyal recipient, about everyone, its own input;
//	          group B hears another value when all inputs agree (the
//	          three generals' two-faced traitor, generalised)
//	deny      honest in round 1, then every relayed value is the default
//	          (what silence means): loyal values look contested
//	echo      tell each recipient, about everyone, the value the
//	          previous recipient's input was: a rotating split
type coalition struct {
	rng     *rand.Rand
	tactic  string
	members map[node.ID]bool
	inputs  map[node.ID]string // loyal inputs, as heard in round 1
	seen    map[string]bool    // every value any member received
	groupA  map[node.ID]bool
	sent    int // entries rewritten
}

var tactics = []string{"split", "contrary", "frame", "mirror", "deny", "echo", "mixed"}

func newCoalition(rng *rand.Rand, tactic string, members map[node.ID]bool, ids []node.ID) *coalition {
	c := &coalition{rng: rng, tactic: tactic, members: members, inputs: map[node.ID]string{},
		seen: map[string]bool{}, groupA: map[node.ID]bool{}}
	// Group A is half of the loyal processes, chosen at random.
	var loyal []node.ID
	for _, id := range ids {
		if !members[id] {
			loyal = append(loyal, id)
		}
	}
	for _, i := range rng.Perm(len(loyal))[:len(loyal)/2] {
		c.groupA[loyal[i]] = true
	}
	return c
}

func (c *coalition) saw(in node.Envelope[Msg]) {
	for _, e := range in.Msg.Entries {
		c.seen[e.Value] = true
		if len(e.Label) == 0 && in.Msg.Round == 1 && !c.members[in.From] {
			c.inputs[in.From] = e.Value
		}
	}
}

// values lists what the coalition has seen, most common loyal input first.
func (c *coalition) values(extra ...string) []string {
	count := map[string]int{}
	for _, v := range c.inputs {
		count[v]++
	}
	var out []string
	for v := range c.seen {
		out = append(out, v)
	}
	out = append(out, extra...)
	slices.Sort(out)
	out = slices.Compact(out)
	slices.SortStableFunc(out, func(a, b string) int { return count[b] - count[a] })
	return out
}

// distinct lists the loyal inputs heard so far.
func (c *coalition) distinct() []string {
	var out []string
	for _, v := range c.inputs {
		out = append(out, v)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (c *coalition) other(not string, vals []string) string {
	var pick []string
	for _, v := range vals {
		if v != not {
			pick = append(pick, v)
		}
	}
	if len(pick) == 0 {
		return not + "'"
	}
	return pick[c.rng.IntN(len(pick))]
}

// rewrite changes msg, which traitor from sends to to in some round.
func (c *coalition) rewrite(from, to node.ID, ids []node.ID, msg Msg, def string) Msg {
	vals := c.values(def)
	tactic := c.tactic
	if tactic == "mixed" {
		tactic = tactics[c.rng.IntN(len(tactics)-1)]
	}
	own, known := c.inputs[to]
	for k := range msg.Entries {
		e := &msg.Entries[k]
		old := e.Value
		switch tactic {
		case "split":
			a, b := vals[0], c.other(vals[0], vals)
			if len(vals) > 1 {
				b = vals[1]
			}
			if c.groupA[to] {
				e.Value = a
			} else {
				e.Value = b
			}
		case "contrary":
			if known {
				e.Value = c.other(own, vals)
			} else {
				e.Value = vals[c.rng.IntN(len(vals))]
			}
		case "mirror":
			switch {
			case !known:
				e.Value = vals[0]
			case c.groupA[to] || len(c.distinct()) > 1:
				e.Value = own
			default:
				e.Value = c.other(own, vals)
			}
		case "deny":
			if msg.Round > 1 {
				e.Value = def
			}
		case "frame":
			if n := len(e.Label); n > 0 && !c.members[e.Label[n-1]] {
				e.Value = c.other(e.Value, vals)
			}
		case "echo":
			at := slices.Index(ids, to)
			prev := ids[(at+len(ids)-1)%len(ids)]
			if v, ok := c.inputs[prev]; ok {
				e.Value = v
			}
		}
		if e.Value != old {
			c.sent++
		}
	}
	return msg
}

// traitor runs an honest Machine for its round timing and its view of the
// tree, and lets the coalition rewrite every message it sends.
type traitor struct {
	*Machine
	c   *coalition
	ids []node.ID
}

func (t *traitor) Step(now time.Time, in node.Envelope[Msg]) error {
	t.c.saw(in)
	return t.Machine.Step(now, in)
}

func (t *traitor) Ready() node.Ready[Msg] {
	r := t.Machine.Ready()
	for i := range r.Msgs {
		r.Msgs[i].Msg = t.c.rewrite(r.Msgs[i].From, r.Msgs[i].To, t.ids, r.Msgs[i].Msg, t.cfg.Default)
	}
	var evs []node.Event
	for _, ev := range r.Events {
		if _, ok := ev.(DecideEvent); !ok {
			evs = append(evs, ev)
		}
	}
	r.Events = evs
	return r
}

// coalitionRun builds an EIG run with n processes, exactly f of them in a
// coalition, and multi-valued inputs: the loyal start with one of up to
// four values (a third of the runs: all the same, so validity binds).
func coalitionRun(seed uint64, n, f int, unsafe bool) (*run, *coalition, sim.Options) {
	rng := rand.New(rand.NewPCG(seed, 3))
	roundLen := 50 * time.Millisecond
	r := &run{cfgs: map[node.ID]Config{}, faulty: map[node.ID]bool{}}
	var ids []node.ID
	for i := 1; i <= n; i++ {
		ids = append(ids, node.ID(i))
	}
	members := map[node.ID]bool{}
	for _, i := range rng.Perm(n)[:f] {
		members[ids[i]] = true
		r.faulty[ids[i]] = true
	}
	kinds := 2 + rng.IntN(3)
	same := rng.IntN(3) == 0
	for _, id := range ids {
		v := strconv.Itoa(rng.IntN(kinds))
		if same {
			v = "7"
		}
		r.cfgs[id] = Config{ID: id, Peers: ids, Algo: EIG, F: f, Value: v, Round: roundLen, Unsafe: unsafe,
			Start: epoch.Add(time.Duration(rng.Int64N(int64(roundLen / 5))))}
	}
	c := newCoalition(rand.New(rand.NewPCG(seed, 4)), tactics[rng.IntN(len(tactics))], members, ids)
	r.wrap = func(id node.ID, m *Machine) node.Machine[Msg] {
		if members[id] {
			return &traitor{Machine: m, c: c, ids: ids}
		}
		return nil
	}
	return r, c, sim.Options{MinLatency: time.Millisecond, MaxLatency: time.Duration(2+rng.IntN(15)) * time.Millisecond}
}

// eigSizes are the (n, f) pairs the coalition runs: n from 4 to 10 with
// f = ⌊(n−1)/3⌋, the most EIG tolerates.
var eigSizes = [][2]int{{4, 1}, {5, 1}, {6, 1}, {7, 2}, {8, 2}, {9, 2}, {10, 3}}

// TestSimEIGCoalitionProperties runs a colluding, adaptive coalition of f
// traitors against EIG for every n from 4 to 10. The seeds are spread over
// the sizes (n = 10 has 5,040 leaves per tree); every size gets at least
// a seventh of them.
func TestSimEIGCoalitionProperties(t *testing.T) {
	seeds := sim.Seeds()
	per := map[int]int{}
	rewrites := 0
	for i, seed := range seeds {
		nf := eigSizes[i%len(eigSizes)]
		if len(seeds) == 1 {
			nf = eigSizes[seed%uint64(len(eigSizes))]
		}
		n, f := nf[0], nf[1]
		r, c, opts := coalitionRun(seed, n, f, false)
		if _, err := r.execute(seed, opts, time.Duration(f+3)*50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := r.check(f, true); err != nil {
			t.Fatalf("sim seed %d (n=%d f=%d, coalition %s): %v\nreplay: %s",
				seed, n, f, c.tactic, err, simtest.Replay(t, seed))
		}
		per[n]++
		rewrites += c.sent
	}
	if rewrites == 0 {
		t.Fatal("the coalition never changed a value: it is not attacking")
	}
	var parts []string
	for _, nf := range eigSizes {
		parts = append(parts, fmt.Sprintf("n=%d f=%d: %d", nf[0], nf[1], per[nf[0]]))
	}
	t.Logf("eig coalition: %d seeds passed (%s; multi-valued inputs, %d values rewritten)", len(seeds), strings.Join(parts, ", "), rewrites)
}

// TestSimEIGCoalitionPlantedBug is the negative control: against n = 3f (run
// with Unsafe) a coalition that knows the protocol tries each of its
// tactics on a seed's run and wins when one breaks agreement or validity.
// The machine's four fixed strategies, drawn per traitor as the other EIG
// test does, are counted on the same runs beside it.
func TestSimEIGCoalitionPlantedBug(t *testing.T) {
	const seeds = 300
	for _, nf := range [][2]int{{3, 1}, {6, 2}} {
		n, f := nf[0], nf[1]
		coalition, fixed := 0, 0
		wins := map[string]int{}
		var example string
		for seed := uint64(1); seed <= seeds; seed++ {
			won := false
			for _, tactic := range tactics {
				r, c, opts := coalitionRun(seed, n, f, true)
				c.tactic = tactic
				r.execute(seed, opts, time.Duration(f+3)*50*time.Millisecond)
				if err := r.check(f, true); err != nil {
					wins[tactic]++
					if !won {
						example = fmt.Sprintf("seed %d (%s): %v", seed, tactic, err)
					}
					won = true
				}
			}
			if won {
				coalition++
			}
			rf, _, opts := coalitionRun(seed, n, f, true)
			rf.wrap = nil
			rng := rand.New(rand.NewPCG(seed, 5))
			for id := range rf.faulty {
				cfg := rf.cfgs[id]
				cfg.Byzantine = Strategy(1 + rng.IntN(4))
				cfg.Lie = "0"
				rf.cfgs[id] = cfg
			}
			rf.execute(seed, opts, time.Duration(f+3)*50*time.Millisecond)
			if err := rf.check(f, true); err != nil {
				fixed++
			}
		}
		if coalition == 0 {
			t.Fatalf("n=%d f=%d: the coalition never broke EIG in %d seeds: the adversary or the checker is toothless", n, f, seeds)
		}
		t.Logf("n=%d f=%d (n ≤ 3f): coalition caught a violation in %d/%d seeds (per tactic %v), the fixed strategies in %d/%d; e.g. %s",
			n, f, coalition, seeds, wins, fixed, seeds, example)
	}
}
