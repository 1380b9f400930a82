package clock

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// An execution of random local events, sends and receives among n
// processes, with the true happened-before relation computed from the
// event graph, checks the seed's two properties: a → b implies L(a) < L(b)
// for Lamport clocks, and for vector clocks a → b exactly when V(a) < V(b).
type event struct {
	proc    node.ID
	lamport uint64
	vector  Vector
	preds   []int // direct predecessors: previous event of the process, and the send for a receive
}

func randomExecution(seed uint64, n, steps int) []event {
	r := rand.New(rand.NewPCG(seed, 1))
	lam := make([]Lamport, n+1)
	vec := make([]Vector, n+1)
	last := make([]int, n+1)
	for i := range vec {
		vec[i] = Vector{}
		last[i] = -1
	}
	var evs []event
	type inflight struct {
		to      node.ID
		send    int
		lamport uint64
		vector  Vector
	}
	var msgs []inflight
	for s := 0; s < steps; s++ {
		p := node.ID(1 + r.IntN(n))
		e := event{proc: p}
		if last[p] >= 0 {
			e.preds = append(e.preds, last[p])
		}
		switch k := r.IntN(3); {
		case k == 0 && len(msgs) > 0: // receive
			i := r.IntN(len(msgs))
			m := msgs[i]
			msgs = append(msgs[:i], msgs[i+1:]...)
			p = m.to
			e = event{proc: p}
			if last[p] >= 0 {
				e.preds = append(e.preds, last[p])
			}
			e.preds = append(e.preds, m.send)
			e.lamport = lam[p].Observe(m.lamport)
			e.vector = vec[p].Observe(p, m.vector)
		case k == 1: // send
			e.lamport = lam[p].Tick()
			e.vector = vec[p].Tick(p)
			to := node.ID(1 + r.IntN(n))
			msgs = append(msgs, inflight{to: to, send: len(evs), lamport: e.lamport, vector: e.vector})
		default: // local
			e.lamport = lam[p].Tick()
			e.vector = vec[p].Tick(p)
		}
		last[p] = len(evs)
		evs = append(evs, e)
	}
	return evs
}

func happenedBefore(evs []event) [][]bool {
	hb := make([][]bool, len(evs))
	for i := range evs {
		hb[i] = make([]bool, len(evs))
		for _, p := range evs[i].preds {
			hb[i][p] = true
			for j := range evs {
				if hb[p][j] {
					hb[i][j] = true
				}
			}
		}
	}
	return hb // hb[b][a]: a → b
}

func TestLogicalClockProperties(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		evs := randomExecution(seed, 2+int(seed%5), 120)
		hb := happenedBefore(evs)
		for b := range evs {
			for a := range evs {
				if a == b {
					continue
				}
				if hb[b][a] && evs[a].lamport >= evs[b].lamport {
					t.Fatalf("seed %d: event %d → %d but Lamport %d ≥ %d", seed, a, b, evs[a].lamport, evs[b].lamport)
				}
				vb := Compare(evs[a].vector, evs[b].vector) == Before
				if hb[b][a] != vb {
					t.Fatalf("seed %d: %d → %d is %v but vectors %v, %v compare %v",
						seed, a, b, hb[b][a], evs[a].vector, evs[b].vector, Compare(evs[a].vector, evs[b].vector))
				}
			}
		}
	}
}

func ExampleCompare() {
	p1, p2 := Vector{}, Vector{}
	a := p1.Tick(1)       // p1 sends a
	b := p2.Tick(2)       // p2 acts on its own
	c := p2.Observe(2, a) // p2 receives a
	fmt.Println(Compare(a, c), Compare(a, b), Compare(c, b))
	// Output: before concurrent after
}
