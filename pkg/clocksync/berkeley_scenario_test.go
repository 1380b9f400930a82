package clocksync

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/scenariotest"
)

// berkeleyTranscript plays the Berkeley transcripts: a fixed master 1
// polling every 200ms; node i's clock is off by skews[i]. A checker
// fails the run when a node's disciplined clock reads earlier than it did
// before (doc.go: clocks are never set back). plant switches a planted
// bug on.
func berkeleyTranscript(plant func(*BerkeleyConfig)) *sim.Scenario[BerkeleyMsg] {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	skews := map[node.ID]time.Duration{2: 30 * time.Millisecond, 3: -20 * time.Millisecond, 4: 500 * time.Millisecond,
		5: 1500 * time.Millisecond}
	return &sim.Scenario[BerkeleyMsg]{
		Codec:   BerkeleyCodec{},
		Options: sim.Options{Start: start},
		Setup: func(r *sim.Run[BerkeleyMsg]) {
			s, last := r.Sim, map[node.ID]time.Time{}
			s.Invariant = func() error {
				for _, id := range s.IDs() {
					m, ok := s.Machine(id).(*Berkeley)
					if !ok {
						continue
					}
					now := m.Local(s.Now())
					if prev, seen := last[id]; seen && now.Before(prev) {
						return fmt.Errorf("the clock of %d went back %v", id, prev.Sub(now))
					}
					last[id] = now
				}
				return nil
			}
		},
		Machine: func(id node.ID, peers []node.ID, _ int, rng *rand.Rand) node.Machine[BerkeleyMsg] {
			cfg := BerkeleyConfig{ID: id, Peers: peers, Master: 1, Interval: 200 * time.Millisecond,
				Skew: skews[id], Epoch: start, Rand: rng}
			if plant != nil {
				plant(&cfg)
			}
			m, err := NewBerkeley(cfg)
			if err != nil {
				panic(err)
			}
			return m
		},
		Format: func(m BerkeleyMsg) string {
			switch m.Type {
			case BerkeleyPoll:
				return fmt.Sprintf("poll seq=%d", m.Seq)
			case BerkeleyReading:
				// The reading as an offset from the true time of the run's
				// start, and what the sender is still slewing.
				return fmt.Sprintf("reading seq=%d clock=%v pending=%v", m.Seq, m.Time.Sub(start), m.Delta)
			case BerkeleyAdjust:
				return fmt.Sprintf("adjust delta=%v", m.Delta)
			}
			return "election-" + sim.FormatMsg(m.Elect)
		},
		Status: func(s *sim.Sim[BerkeleyMsg], id node.ID, m node.Machine[BerkeleyMsg]) string {
			return fmt.Sprintf("clock %+v", m.(*Berkeley).Local(s.Now()).Sub(s.Now()).Round(time.Microsecond))
		},
	}
}

// TestScenarioTranscripts plays testdata/berkeley-*.txt.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "berkeley-*.txt"), berkeleyTranscript(nil).RunFile)
}

// TestScenarioPlantedBugs: the discipline's planted bugs change the
// transcript that exercises them (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	scenariotest.CatchPlanted(t, scenariotest.Plant(berkeleyTranscript), []scenariotest.Bug[func(*BerkeleyConfig)]{
		{Name: "stepBack", File: "berkeley-outlier.txt", Plant: func(c *BerkeleyConfig) { c.Discipline.stepBack = true }, Shows: "the clock of 4 went back"},
		{Name: "stepBackLarge", File: "berkeley-far-ahead.txt", Plant: func(c *BerkeleyConfig) { c.Discipline.stepBackLarge = true }, Shows: "the clock of 5 went back"},
	})
}
