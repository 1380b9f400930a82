package election

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/scenariotest"
)

// transcript plays the election transcripts: bully with the default timing,
// and with lease > 0 leader leases of that length; with backups > 0,
// Chang–Roberts with claims backed up on that many members, each hold
// and each use of a backup printed, and the claim checker (claimChecker:
// one holder per claim) installed. The term and lease checkers are
// installed; plant switches a planted bug on.
func transcript(lease time.Duration, backups int, plant func(*Config)) *sim.Scenario[Msg] {
	var run *sim.Run[Msg]
	claims := &claimChecker{held: map[[2]uint64]uint64{}}
	return &sim.Scenario[Msg]{
		Codec: Codec{},
		Machine: func(id node.ID, peers []node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: peers, Algo: Bully, Rand: rng, Lease: lease}
			if backups > 0 {
				cfg.Algo, cfg.Backups = ChangRoberts, backups
				cfg.onHold = func(self, origin node.ID, round, count uint64) {
					run.Printf("%d: holds the claim of %d at count %d", self, origin, count)
					claims.hold(self, origin, round, count)
				}
				cfg.onBackup = func(self, origin node.ID, _ uint64) {
					run.Printf("%d: uses its backup of the claim of %d", self, origin)
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
			m.Round = 0 // drawn at random: it says nothing here
			return sim.FormatMsg(m)
		},
		Commands: map[string]func(*sim.Run[Msg], []string) error{
			// dup P: from now on each message is delivered twice with
			// probability P (0 to 1).
			"dup": func(r *sim.Run[Msg], args []string) error {
				if len(args) != 1 {
					return fmt.Errorf("usage: dup P")
				}
				p, err := strconv.ParseFloat(args[0], 64)
				if err != nil || p < 0 || p > 1 {
					return fmt.Errorf("dup wants a probability from 0 to 1, not %q", args[0])
				}
				r.Sim.SetFaults(0, p)
				return nil
			},
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
			run = r
			s.Invariant = func() error { return claims.err }
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
// lease-* run with 200ms leader leases, claim-* with Chang–Roberts claims
// backed up on 2 members.
func play(path string, plant func(*Config), rewrite bool) (got, want string, err error) {
	lease, backups := time.Duration(0), 0
	switch base := filepath.Base(path); {
	case strings.HasPrefix(base, "lease-"):
		lease = 200 * time.Millisecond
	case strings.HasPrefix(base, "claim-"):
		backups = 2
	}
	return transcript(lease, backups, plant).RunFile(path, rewrite)
}

// TestScenarioTranscripts plays testdata/*.txt; files named lease-* run
// with 200ms leader leases, claim-* Chang–Roberts with backups.
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
		{Name: "bugEager", File: "claim-holder-crashes.txt", Plant: func(c *Config) { c.backupBug = bugEager }, Shows: "at count 2, after count 3 was held"},
		{Name: "bugOldCopy", File: "claim-duplicate.txt", Plant: func(c *Config) { c.backupBug = bugOldCopy }, Shows: "at count 3, after count 3 was held"},
		{Name: "bugNoGuard", File: "lease-partition.txt", Plant: func(c *Config) { c.leaseBug = bugNoGuard }, Shows: "closer than the guard"},
	})
}
