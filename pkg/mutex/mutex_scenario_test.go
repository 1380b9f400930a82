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

// algoOf is the algorithm a transcript plays, from its file name:
// central-*.txt, ra-*.txt (Ricart–Agrawala), ring-*.txt (the token ring,
// with k = n−1 backups and an idle token held 100ms per daemon so that it
// moves in readable steps) and voting-*.txt.
func algoOf(path string) Algo {
	base := filepath.Base(path)
	for _, a := range []struct {
		prefix string
		algo   Algo
	}{{"ra-", RicartAgrawala}, {"ring-", TokenRing}, {"voting-", Voting}} {
		if strings.HasPrefix(base, a.prefix) {
			return a.algo
		}
	}
	return Central
}

// play plays the transcript at path with the algorithm its name says.
func play(path string, rewrite bool) (got, want string, err error) {
	return scenario(algoOf(path), nil).RunFile(path, rewrite)
}

// playPlanted plays the transcript at path with a planted bug on.
func playPlanted(path string, plant func(*Config)) (got, want string, err error) {
	return scenario(algoOf(path), plant).RunFile(path, false)
}

// scenario plays lockd's transcripts: daemons running algo with a 400ms
// lease, the mutual exclusion checkers installed; plant switches a
// planted bug on in every machine.
func scenario(algo Algo, plant func(*Config)) *sim.Scenario[Msg] {
	return &sim.Scenario[Msg]{
		Codec: Codec{},
		Machine: func(id node.ID, peers []node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: peers, Algo: algo, Lease: 400 * time.Millisecond, Rand: rng, Boot: uint64(inc)}
			if algo == TokenRing {
				cfg.RingHold = 100 * time.Millisecond
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
			if m.Type == MsgElection {
				return "election-" + sim.FormatMsg(m.Elect)
			}
			// Attempt numbers start at a random point: they say nothing here;
			// nor does a voting confirmation's send time (its Seq).
			m.Attempt = 0
			if m.Type == MsgVConfirm || m.Type == MsgVAck {
				m.Seq = 0
			}
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
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), play)
}

// TestScenarioPlantedBugs: each planted bug changes the transcript that
// exercises it (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	scenariotest.CatchPlanted(t, playPlanted, []scenariotest.Bug[func(*Config)]{
		{Name: "noTakeoverWait", File: "central-failover.txt", Plant: func(c *Config) { c.noTakeoverWait = true }, Shows: `two holders of "lockA"`},
		{Name: "centralLIFO", File: "central-failover.txt", Plant: func(c *Config) { c.centralLIFO = true }, Shows: "5->3 grant term=4 seq=1 name=lockA"},
		{Name: "sessionTrust", File: "central-session-join-lost.txt", Plant: func(c *Config) { c.sessionTrust = true }, Shows: `two holders of "lockB"`},
		{Name: "raAlwaysOK", File: "ra-concurrent.txt", Plant: func(c *Config) { c.raAlwaysOK = true }, Shows: `two holders of "lockA"`},
		{Name: "raHandoff", File: "ra-concurrent.txt", Plant: func(c *Config) { c.raHandoff = true }, Shows: "+460ms 1: acquired lockA"},
		{Name: "ringRegrant", File: "ring-order.txt", Plant: func(c *Config) { c.ringRegrant = true }, Shows: "+170ms 1: acquired lockA token 4"},
		{Name: "ringNoBump", File: "ring-two-holders-crash.txt", Plant: func(c *Config) { c.ringNoBump = true }, Shows: `token of "lockA" went from 6 to 5`},
		{Name: "voteEarlyExpiry", File: "voting-rival-cut-off.txt", Plant: func(c *Config) { c.voteEarlyExpiry = true }, Shows: `two holders of "lockA"`},
		{Name: "forgetVotes", File: "voting-rival-cut-off.txt", Plant: func(c *Config) { c.forgetVotes = true }, Shows: `two holders of "lockA"`},
		{Name: "voteValidFromAck", File: "voting-slow-ack.txt", Plant: func(c *Config) { c.voteValidFromAck = true }, Shows: `two holders of "lockA"`},
	})
}
