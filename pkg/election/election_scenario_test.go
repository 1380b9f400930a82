package election

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

// transcript plays the election transcripts: bully with the default timing,
// and with lease > 0 leader leases of that length; the term and lease
// checkers are installed; plant switches a planted bug on.
func transcript(lease time.Duration, plant func(*Config)) *sim.Scenario[Msg] {
	return &sim.Scenario[Msg]{
		Codec: Codec{},
		Machine: func(id node.ID, peers []node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: peers, Algo: Bully, Rand: rng, Lease: lease}
			if plant != nil {
				plant(&cfg)
			}
			m, err := New(cfg)
			if err != nil {
				panic(err)
			}
			return m
		},
		Event: func(ev node.Event) string {
			if le, ok := ev.(LeaseEvent); ok && le.Renewed {
				return ""
			}
			return ev.String()
		},
		Status: func(_ *sim.Sim[Msg], _ node.ID, m node.Machine[Msg]) string {
			l, t := m.(*Machine).Leader()
			return fmt.Sprintf("leader %d term %d", l, t)
		},
		Setup: func(r *sim.Run[Msg]) {
			chk, leases := NewChecker(), NewLeaseChecker()
			if lease > 0 {
				leases.Margin = time.Duration(float64(lease/10) / (1 + 0.01)) // the default Guard, clocks within Drift
			}
			s := r.Sim
			s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
				switch e := ev.(type) {
				case LeaseEvent:
					return leases.Observe(id, at, e, s.RealTime(id, e.Until))
				case LeaderEvent:
					return chk.Observe(id, e)
				}
				return nil
			}
		},
	}
}

// play plays the transcript at path with plant switched on; files named
// lease-* run with 200ms leader leases.
func play(path string, plant func(*Config), rewrite bool) (got, want string, err error) {
	lease := time.Duration(0)
	if strings.HasPrefix(filepath.Base(path), "lease-") {
		lease = 200 * time.Millisecond
	}
	return transcript(lease, plant).RunFile(path, rewrite)
}

// TestScenarioTranscripts plays testdata/*.txt; files named lease-* run
// with 200ms leader leases.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), func(path string, rewrite bool) (string, string, error) {
		return play(path, nil, rewrite)
	})
}

// TestScenarioPlantedBugs: each planted bug of package election changes
// the transcript that exercises it (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	planted := func(path string, plant func(*Config)) (string, string, error) { return play(path, plant, false) }
	scenariotest.CatchPlanted(t, planted, []scenariotest.Bug[func(*Config)]{
		{Name: "naiveTerms", File: "bully-crashed-candidate.txt", Plant: func(c *Config) { c.naiveTerms = true }, Shows: "two leaders for term 2"},
		{Name: "bugIgnorePromises", File: "lease-partition.txt", Plant: func(c *Config) { c.leaseBug = bugIgnorePromises }, Shows: "two lease holders at once"},
		{Name: "bugNoDrift", File: "lease-partition.txt", Plant: func(c *Config) { c.leaseBug = bugNoDrift }, Shows: "+1.13s 3: lease lost term 2"},
		{Name: "bugNoQuiet", File: "lease-partition.txt", Plant: func(c *Config) { c.leaseBug = bugNoQuiet }, Shows: "+202ms 3: lease held term 2"},
		{Name: "bugNoGuard", File: "lease-partition.txt", Plant: func(c *Config) { c.leaseBug = bugNoGuard }, Shows: "closer than the guard"},
	})
}
