package consensus

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/scenariotest"
)

// transcript plays the consensus transcripts: FloodSet with n = 4, f = 1,
// inputs 3, 5, 1 and 7, round 1 starting 10ms into the run on a shared
// clock (no start barrier); a checker of agreement among the deciders is
// installed (the transcripts say which processes crash). plant switches
// a planted bug on.
func transcript(plant func(*Config)) *sim.Scenario[Msg] {
	inputs := map[node.ID]string{1: "3", 2: "5", 3: "1", 4: "7"}
	return &sim.Scenario[Msg]{
		Codec:   Codec{},
		Options: sim.Options{Start: epoch},
		Machine: func(id node.ID, peers []node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: peers, Algo: FloodSet, F: 1, Value: inputs[id], Start: epoch.Add(10 * time.Millisecond), Rand: rng}
			if plant != nil {
				plant(&cfg)
			}
			m, err := New(cfg)
			if err != nil {
				panic(err)
			}
			return m
		},
		Format: func(m Msg) string {
			if m.Hello {
				return fmt.Sprintf("hello ready=%v", m.Ready)
			}
			var w []string
			for _, e := range m.Entries {
				w = append(w, e.Value)
			}
			return fmt.Sprintf("round %d W={%s}", m.Round, strings.Join(w, ","))
		},
		Setup: func(r *sim.Run[Msg]) {
			decided := map[node.ID]string{}
			r.Sim.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
				d, ok := ev.(DecideEvent)
				if !ok {
					return nil
				}
				for other, v := range decided {
					if v != d.Value {
						return fmt.Errorf("agreement: %d decided %s, %d decided %s", other, v, id, d.Value)
					}
				}
				decided[id] = d.Value
				return nil
			}
		},
	}
}

// TestScenarioTranscripts plays testdata/*.txt.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), transcript(nil).RunFile)
}

// TestScenarioPlantedBugs: the planted bugs of FloodSet change the
// transcript that exercises them (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	scenariotest.CatchPlanted(t, scenariotest.Plant(transcript), []scenariotest.Bug[func(*Config)]{
		{Name: "rounds = f", File: "floodset-crash-mid-round.txt", Plant: func(c *Config) { c.rounds = c.F }, Shows: "agreement"},
		{Name: "bugIgnoreMissed", File: "floodset-cut-off.txt", Plant: func(c *Config) { c.bug = bugIgnoreMissed }, Shows: "1: decide 3"},
	})
}
