package gossip

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

// transcript plays the gossip transcripts: random push with Fanout 1 and
// TTL 2 over 100ms rounds, the integrity and agreement checker installed;
// plant switches a planted bug on.
func transcript(plant func(*Config)) *sim.Scenario[Msg] {
	var chk *Checker
	seqs := map[node.ID]uint64{}
	return &sim.Scenario[Msg]{
		Codec: Codec{},
		Machine: func(id node.ID, peers []node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: peers, Fanout: 1, TTL: 2, Period: 100 * time.Millisecond, Rand: rng}
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
			var parts []string
			for _, e := range m.Events {
				parts = append(parts, fmt.Sprintf("%d/%d:%s", e.Origin, e.Seq, e.Payload))
			}
			for _, h := range m.Digest {
				parts = append(parts, fmt.Sprintf("have %d<%d", h.Origin, h.Next))
			}
			return strings.Join(append([]string{m.Type.String()}, parts...), " ")
		},
		Setup: func(r *sim.Run[Msg]) {
			chk = NewChecker()
			r.Sim.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
				if d, ok := ev.(DeliverEvent); ok {
					return chk.Observe(id, d)
				}
				return nil
			}
		},
		Commands: map[string]func(*sim.Run[Msg], []string) error{
			// broadcast N PAYLOAD: node N broadcasts PAYLOAD.
			"broadcast": func(r *sim.Run[Msg], args []string) error {
				if len(args) != 2 {
					return fmt.Errorf("usage: broadcast N PAYLOAD")
				}
				id, err := r.ID(args[0])
				if err != nil {
					return err
				}
				seqs[id]++
				chk.Broadcast(id, seqs[id], []byte(args[1]))
				return r.Inject(id, Msg{Type: MsgBroadcast, Events: []Event{{Payload: []byte(args[1])}}})
			},
			// missing: what the live nodes have not delivered (agreement).
			"missing": func(r *sim.Run[Msg], args []string) error {
				var live []node.ID
				for _, id := range r.Sim.IDs() {
					if r.Sim.Alive(id) {
						live = append(live, id)
					}
				}
				for _, m := range chk.Missing(live) {
					r.Printf("missing %s", m)
				}
				return nil
			},
		},
	}
}

// TestScenarioTranscripts plays testdata/*.txt.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), transcript(nil).RunFile)
}

// TestScenarioPlantedBugs: the planted bugs of package gossip change the
// transcript that exercises them (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	scenariotest.CatchPlanted(t, scenariotest.Plant(transcript), []scenariotest.Bug[func(*Config)]{
		{Name: "noDedup", File: "push-then-pull.txt", Plant: func(c *Config) { c.noDedup = true }, Shows: "failed:"},
		{Name: "noPull", File: "push-then-pull.txt", Plant: func(c *Config) { c.noPull = true }, Shows: "missing"},
	})
}
