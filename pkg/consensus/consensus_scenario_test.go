package consensus

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

var rewrite = flag.Bool("rewrite", false, "write the output of the transcripts in testdata/ back into them")

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
	sc := transcript(nil)
	sim.Transcripts(t, filepath.Join("testdata", "*.txt"), func(path string) (string, string, error) {
		return sc.RunFile(path, *rewrite)
	})
}

// TestScenarioPlantedBugs: the planted bugs of FloodSet change the
// transcript that exercises them (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	for _, c := range []struct {
		bug, file string
		plant     func(*Config)
		shows     string // in the output with the bug: a checker's verdict, or the changed line
	}{
		{"rounds = f", "floodset-crash-mid-round.txt", func(c *Config) { c.rounds = c.F }, "agreement"},
		{"bugIgnoreMissed", "floodset-cut-off.txt", func(c *Config) { c.bug = bugIgnoreMissed }, "1: decide 3"},
	} {
		got, want, err := transcript(c.plant).RunFile(filepath.Join("testdata", c.file), false)
		if err != nil {
			t.Fatal(err)
		}
		if got == want || !strings.Contains(got, c.shows) {
			t.Errorf("%s: %s does not catch the bug (want %q in the output):\n%s", c.bug, c.file, c.shows, sim.Diff(want, got))
		}
	}
}
