package mutex

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
)

// scenario plays lockd's transcripts: central coordinator daemons with a
// 400ms lease, the mutual exclusion checkers installed; plant switches a
// planted bug on in every machine.
func scenario(plant func(*Config)) *sim.Scenario[Msg] {
	return &sim.Scenario[Msg]{
		Codec: Codec{},
		Machine: func(id node.ID, peers []node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: peers, Algo: Central, Lease: 400 * time.Millisecond, Rand: rng, Boot: uint64(inc)}
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
			if m.Type == MsgElection {
				return "election-" + sim.FormatMsg(m.Elect)
			}
			// Attempt numbers start at a random point: they say nothing here.
			m.Attempt = 0
			m.Locks = slices.Clone(m.Locks)
			for i := range m.Locks {
				m.Locks[i].Attempt = 0
			}
			return sim.FormatMsg(m)
		},
		Status: func(s *sim.Sim[Msg], id node.ID, m node.Machine[Msg]) string {
			var held []string
			for _, h := range m.(Machine).Holdings(s.LocalNow(id)) {
				held = append(held, fmt.Sprintf("%s/%d token %d", h.Name, h.Client, h.Token))
			}
			return "holds [" + strings.Join(held, " ") + "]"
		},
		Setup: func(r *sim.Run[Msg]) {
			chk := NewChecker()
			r.Sim.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error { return chk.Observe(id, ev) }
			r.Sim.Invariant = func() error { return Exclusive(r.Sim) }
		},
		Commands: map[string]func(*sim.Run[Msg], []string) error{
			// acquire N NAME [CLIENT]: a client of daemon N asks for NAME.
			"acquire": func(r *sim.Run[Msg], args []string) error { return local(r, LocalAcquire, args) },
			// release N NAME [CLIENT]: the client releases NAME or stops waiting.
			"release": func(r *sim.Run[Msg], args []string) error { return local(r, LocalRelease, args) },
		},
	}
}

func local(r *sim.Run[Msg], t MsgType, args []string) error {
	if len(args) < 2 || len(args) > 3 {
		return fmt.Errorf("usage: %v N NAME [CLIENT]", t)
	}
	id, err := r.ID(args[0])
	if err != nil {
		return err
	}
	client := uint64(1)
	if len(args) == 3 {
		if client, err = strconv.ParseUint(args[2], 10, 64); err != nil {
			return fmt.Errorf("client: %v", err)
		}
	}
	return r.Inject(id, Msg{Type: t, Name: args[1], Client: client})
}

// TestScenarioTranscripts plays testdata/*.txt.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), scenario(nil).RunFile)
}

// TestScenarioPlantedBugs: each planted bug of the central coordinator
// changes the transcript that exercises it (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	scenariotest.CatchPlanted(t, scenariotest.Plant(scenario), []scenariotest.Bug[func(*Config)]{
		{Name: "noTakeoverWait", File: "central-failover.txt", Plant: func(c *Config) { c.noTakeoverWait = true }, Shows: `two holders of "lockA"`},
		{Name: "centralLIFO", File: "central-failover.txt", Plant: func(c *Config) { c.centralLIFO = true }, Shows: "5->3 grant term=4 seq=1 name=lockA"},
	})
}
