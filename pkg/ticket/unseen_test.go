package ticket

import (
	"fmt"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestTempOutlastsSupportBothWays checks the drift margin of the
// temporary coordinator's wait and of a voter's ban (tempFor; doc.go,
// "Safety": clock drift counts both ways): each clock may run off the
// true rate by up to Config.Drift, so the wait, timed on a clock running
// fast, must outlast on the true time line everything that can keep an
// excluded process's support alive (a window stretched to vouchMax, a
// newcomer's grace, a credit per process of E_pq: vouchMax + grace +
// dist·(Round+δ)), timed on a clock running slow. The random fault runs
// draw drifts of ±0.4% against the default 1%, and their intervals are
// a few windows long, so a margin that counts the drift once would pass
// there; this checks the bound itself over stretched windows and long
// exclusions, with no Margin to hide behind.
func TestTempOutlastsSupportBothWays(t *testing.T) {
	for _, drift := range []float64{0.001, 0.01, 0.02} {
		for _, window := range []int{3, 5, 12} {
			for _, stretch := range []int{1, 4, maxStretch} {
				for _, k := range []int{1, 2, 3} {
					m := &Machine{cfg: Config{K: k, Round: 100 * time.Millisecond, Delta: 50 * time.Millisecond,
						Window: window, Stretch: stretch, Drift: drift}}
					for dist := uint32(1); dist <= 64; dist *= 2 {
						support := m.vouchMax() + m.grace() + time.Duration(dist)*(m.cfg.Round+m.cfg.Delta)
						slowest := time.Duration(float64(support) / (1 - drift))
						wait := time.Duration(float64(m.tempFor(dist)) / (1 + drift))
						if wait < slowest {
							t.Fatalf("drift %g, window %d, stretch %d, k %d, dist %d: the wait lasts %v of true time on a fast clock, but support can last %v on a slow one",
								drift, window, stretch, k, dist, wait, slowest)
						}
					}
				}
			}
		}
	}
}

// TestSimCreditTwoRounds: a predecessor new to a process's L has not yet
// heard of it and sends it no ALIVE; it counts as vouching for two rounds
// only (doc.go, "Safety": the temporary coordinator's wait adds two
// rounds of credit per process of E_pq, not a window). A settled core of
// five (k = 1) loses a member; the exclusion and the UPDATEs that follow
// bring predecessors new to L. At every step, every credit just given
// must end within two rounds of the receiver's clock: a credit of a
// whole window keeps an excluded process's support past the wait that
// protects the pool.
func TestSimCreditTwoRounds(t *testing.T) {
	credits, seeds := 0, uint64(20)
	if raceOn {
		seeds = 6 // a check of every machine after every event: 25 s at 20 seeds under -race
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		p, err := settledPool(seed, 6, 8, 1, 0, 0)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		p.s.OnEvent = nil // a process excluded on the way is no failure here; Theorem 4.1 still is
		type pair struct{ id, o node.ID }
		seen := map[pair]time.Time{}
		safe := p.s.Invariant
		p.s.Invariant = func() error {
			if err := safe(); err != nil {
				return err
			}
			for _, id := range p.ids {
				m := p.machines[id]
				now := p.s.LocalNow(id)
				if !p.s.Alive(id) || m.alive == nil || m.graceUntil.After(now) {
					continue // a newcomer's grace: its coordinator vouches from the join, for a window (counted as grace())
				}
				for _, o := range m.preds {
					at, ok := m.alive[o]
					if by := m.aliveBy[o]; !ok || by != 0 || seen[pair{id, o.ID}].Equal(at) {
						continue // no credit, or one already checked
					}
					seen[pair{id, o.ID}] = at
					credits++
					if end, most := at.Add(m.vouchFor(o)), now.Add(2*m.cfg.Round); end.After(most) {
						return fmt.Errorf("process %d credits its new predecessor %d until %v after now, more than two rounds (%v)",
							id, o.ID, end.Sub(now), 2*m.cfg.Round)
					}
				}
			}
			return nil
		}
		core := p.coreOf()
		p.s.Crash(core[p.r.IntN(len(core))])
		if err := p.s.RunFor(3 * time.Second); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	if credits < int(seeds)*2/5 {
		t.Fatalf("only %d credits given in %d seeds: the schedule misses its aim", credits, seeds)
	}
	t.Logf("%d credits to predecessors new to L, each within two rounds", credits)
}
