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
// plant switches a planted bug on. Files named buffer-* run with a push
// buffer of 2 events; view-* with partial views of 2 members, each member
// knowing only the one before it (1 knows 2), and status shows the views.
func transcript(path string, plant func(*Config)) *sim.Scenario[Msg] {
	var chk *Checker
	seqs := map[node.ID]uint64{}
	base := filepath.Base(path)
	view := strings.HasPrefix(base, "view-")
	return &sim.Scenario[Msg]{
		Codec: Codec{},
		Status: func(_ *sim.Sim[Msg], _ node.ID, m node.Machine[Msg]) string {
			if !view {
				return ""
			}
			var ids []string
			for _, e := range m.(*Machine).View() {
				ids = append(ids, fmt.Sprint(e.ID))
			}
			return "view [" + strings.Join(ids, " ") + "]"
		},
		Machine: func(id node.ID, peers []node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: peers, Fanout: 1, TTL: 2, Period: 100 * time.Millisecond, Rand: rng}
			if strings.HasPrefix(base, "buffer-") {
				cfg.Buffer = 2
			}
			if view {
				cfg.View, cfg.Peers = 2, []node.ID{id - 1}
				if id == 1 {
					cfg.Peers = []node.ID{2}
				}
			}
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
			if len(m.View) > 0 {
				var ids []string
				for _, e := range m.View {
					ids = append(ids, fmt.Sprint(e.ID))
				}
				parts = append(parts, "["+strings.Join(ids, " ")+"]")
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
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), func(path string, rewrite bool) (string, string, error) {
		return transcript(path, nil).RunFile(path, rewrite)
	})
}

// TestScenarioPlantedBugs: the planted bugs of package gossip change the
// transcript that exercises them (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	scenariotest.CatchPlanted(t, func(path string, plant func(*Config)) (string, string, error) {
		return transcript(path, plant).RunFile(path, false)
	}, []scenariotest.Bug[func(*Config)]{
		{Name: "noDedup", File: "push-then-pull.txt", Plant: func(c *Config) { c.noDedup = true }, Shows: "failed:"},
		{Name: "noPull", File: "push-then-pull.txt", Plant: func(c *Config) { c.noPull = true }, Shows: "missing"},
		// 1 forgot c and d when it cut them from its buffer: its repair
		// names events it no longer has.
		{Name: "forgetDropped", File: "buffer-overflow.txt", Plant: func(c *Config) { c.forgetDropped = true }, Shows: "failed: sim seed 0 at +28.279511ms: codec cannot decode its own"},
		// Nobody ever learns of 5: shuffles carry no sender.
		{Name: "dropSelf", File: "view-join.txt", Plant: func(c *Config) { c.dropSelf = true }, Shows: "+1s 4: up view [3 1]"},
		{Name: "frozenView", File: "view-join.txt", Plant: func(c *Config) { c.frozenView = true }, Shows: "+1s 5: up view [4]"},
	})
}
