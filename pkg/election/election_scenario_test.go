package election

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

func play(t *testing.T, file string, plant func(*Config)) (got, want string) {
	lease := time.Duration(0)
	if strings.HasPrefix(filepath.Base(file), "lease-") {
		lease = 200 * time.Millisecond
	}
	got, want, err := transcript(lease, plant).RunFile(file, *rewrite && plant == nil)
	if err != nil {
		t.Fatal(err)
	}
	return got, want
}

// TestScenarioTranscripts plays testdata/*.txt; files named lease-* run
// with 200ms leader leases.
func TestScenarioTranscripts(t *testing.T) {
	sim.Transcripts(t, filepath.Join("testdata", "*.txt"), func(path string) (string, string, error) {
		got, want := play(t, path, nil)
		return got, want, nil
	})
}

// TestScenarioPlantedBugs: each planted bug of package election changes
// the transcript that exercises it (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	for _, c := range []struct {
		bug, file string
		plant     func(*Config)
		shows     string // in the output with the bug: a checker's verdict, or the changed line
	}{
		{"naiveTerms", "bully-crashed-candidate.txt", func(c *Config) { c.naiveTerms = true }, "two leaders for term 2"},
		{"bugIgnorePromises", "lease-partition.txt", func(c *Config) { c.leaseBug = bugIgnorePromises }, "two lease holders at once"},
		{"bugNoDrift", "lease-partition.txt", func(c *Config) { c.leaseBug = bugNoDrift }, "+1.13s 3: lease lost term 2"},
		{"bugNoQuiet", "lease-partition.txt", func(c *Config) { c.leaseBug = bugNoQuiet }, "+202ms 3: lease held term 2"},
		{"bugNoGuard", "lease-partition.txt", func(c *Config) { c.leaseBug = bugNoGuard }, "closer than the guard"},
	} {
		got, want := play(t, filepath.Join("testdata", c.file), c.plant)
		if got == want || !strings.Contains(got, c.shows) {
			t.Errorf("%s: %s does not catch the bug (want %q in the output):\n%s", c.bug, c.file, c.shows, sim.Diff(want, got))
		}
	}
}
