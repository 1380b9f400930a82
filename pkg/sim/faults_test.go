package sim_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// faultRun plays a fault schedule with seed and returns the faults it
// applied (in order, one string per step) and the trace hash.
func faultRun(t *testing.T, seed uint64, keepOne bool) ([]string, uint64) {
	t.Helper()
	s, _ := newSim(seed, sim.Options{})
	r := rand.New(rand.NewPCG(seed, 1))
	var log []string
	names := map[sim.Fault]string{sim.Crash: "crash", sim.Restart: "restart", sim.Pause: "pause", sim.Resume: "resume",
		sim.Partition: "partition", sim.Isolate: "isolate", sim.Heal: "heal"}
	err := s.RunFaults(r, sim.Faults{
		Steps:  40,
		Faults: []sim.Fault{sim.Crash, sim.Restart, sim.Pause, sim.Resume, sim.Partition, sim.Isolate, sim.Heal},
		Gap:    10 * time.Millisecond, Jitter: 50 * time.Millisecond,
		Pick: func(f sim.Fault, _ node.ID) sim.Fault {
			if keepOne && f == sim.Crash && s.Live() <= 1 {
				return sim.Skip
			}
			return f
		},
		Done: func(f sim.Fault, id node.ID) error {
			log = append(log, names[f]+" "+string(rune('0'+id)))
			if f == sim.Crash && s.Alive(id) {
				t.Errorf("Done(crash %d) called before the crash", id)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if keepOne && s.Live() == 0 {
		t.Fatal("Pick's Skip did not keep a node up")
	}
	return log, s.TraceHash()
}

// TestRunFaults: a fault schedule replays exactly from its seed, differs
// for another seed, and applies every kind of fault it lists.
func TestRunFaults(t *testing.T) {
	a, ha := faultRun(t, 3, true)
	b, hb := faultRun(t, 3, true)
	c, hc := faultRun(t, 4, true)
	if !slices.Equal(a, b) || ha != hb {
		t.Fatalf("seed 3 twice: %v / %v, hashes %x %x", a, b, ha, hb)
	}
	if slices.Equal(a, c) || ha == hc {
		t.Fatalf("seeds 3 and 4 gave the same schedule %v", a)
	}
	seen := map[string]bool{}
	for _, l := range a {
		seen[l[:len(l)-2]] = true
	}
	if len(seen) != 7 {
		t.Fatalf("40 steps applied only %v", seen)
	}
}
