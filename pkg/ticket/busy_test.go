package ticket

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// stallsApart: a settled pool (stretchPool, Stretch 3: windows of 300 ms)
// in which one core process stalls for 150 ms (its factor rises to 2),
// runs on time for gap, and then stalls for 450 ms, one and a half
// windows. It reports whether the process lost its support, and fails if
// any other did. Theorem 4.1 is checked at every step (settledPool).
func stallsApart(seed uint64, gap time.Duration, b bug) (bool, error) {
	p, excluded, err := stretchPool(seed, 3, b)
	if err != nil {
		return false, err
	}
	victim := p.coreOf()[int(seed)%len(p.coreOf())]
	for _, step := range []func() error{
		func() error { return p.pauseFor(victim, 150*time.Millisecond) },
		func() error { return p.s.RunFor(gap) },
		func() error { return p.pauseFor(victim, 450*time.Millisecond) },
		func() error { return p.s.RunFor(2 * time.Second) },
	} {
		if err := step(); err != nil {
			return false, err
		}
	}
	for id, n := range excluded {
		if id != victim && n > 0 {
			return false, fmt.Errorf("process %d lost its support though only %d stalled", id, victim)
		}
	}
	return excluded[victim] > 0, nil
}

// TestSimStretchOutlastsQuietSpell: a busy host's stalls come in bursts
// with quiet spells between. A process late once keeps its factor through
// two seconds on time (20 rounds, under healthDecay), so a second, longer
// stall finds its support stretched and it keeps its place. The old decay
// of 8 rounds (bugFastDecay) is back at 1 by then, and the same stall
// excludes it.
func TestSimStretchOutlastsQuietSpell(t *testing.T) {
	seeds := sim.Seeds()
	if len(seeds) > 20 {
		seeds = seeds[:20]
	}
	caught := 0
	for _, seed := range seeds {
		lost, err := stallsApart(seed, 2*time.Second, 0)
		if err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./pkg/ticket -run TestSimStretchOutlastsQuietSpell -seed %d", seed, err, seed)
		}
		if lost {
			t.Fatalf("seed %d: the process lost its place at the second stall, 2 s after the first\nreplay: go test ./pkg/ticket -run TestSimStretchOutlastsQuietSpell -seed %d", seed, seed)
		}
		if lost, err := stallsApart(seed, 2*time.Second, bugFastDecay); err != nil {
			t.Fatalf("seed %d with bugFastDecay: %v", seed, err)
		} else if lost {
			caught++
		}
	}
	if caught != len(seeds) {
		t.Fatalf("the fast decay (bugFastDecay) lost the process in %d of %d seeds, want all", caught, len(seeds))
	}
	t.Logf("%d seeds: a 450 ms stall 2 s after a short one kept its place; with the old decay it lost it in all", len(seeds))
}

// TestSimStretchSafetyVouchPastWait: the other side of vouchFor's rule:
// a vouch may last Stretch windows because every wait on the safety side
// counts that many; one that outlasts them (bugVouchPastStretch, twice as
// long) lets a cut-off process act on tickets handed out again, and
// Theorem 4.1 catches it (stretchCut, as TestSimStretchSafety).
func TestSimStretchSafetyVouchPastWait(t *testing.T) {
	seeds := sim.Seeds()
	if len(seeds) > 20 {
		seeds = seeds[:20]
	}
	caught := 0
	var first error
	for _, seed := range seeds {
		if err := stretchCut(seed, bugVouchPastStretch); err != nil {
			caught++
			if first == nil {
				first = err
			}
		}
	}
	if caught == 0 {
		t.Fatalf("planted bug (vouches past the safety waits) never caught in %d seeds", len(seeds))
	}
	t.Logf("the planted bug caught in %d of %d seeds, e.g. %v", caught, len(seeds), first)
}

// TestNextProcessKeepsHealth: a member's next process (after a leave, an
// exclusion or a lost lease) starts at its last one's local-health
// factor, never above Stretch, so a busy host's new process does not
// suspect its successor as if the host were idle.
func TestNextProcessKeepsHealth(t *testing.T) {
	for _, c := range []struct {
		level   uint8
		stretch int
		want    int
	}{{0, 3, 1}, {2, 3, 3}, {7, 3, 3}, {1, 1, 1}} {
		h, err := NewMember(Config{ID: 1, Rand: rand.New(rand.NewPCG(1, 2)), FaultTolerant: true, Stretch: c.stretch},
			func() []node.ID { return []node.ID{2} }, false)
		if err != nil {
			t.Fatal(err)
		}
		h.m.health.level = c.level
		cfg := h.next()
		cfg.Contacts = []node.ID{2}
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Health(); got != c.want {
			t.Errorf("level %d, stretch %d: the next process starts at health %d, want %d", c.level, c.stretch, got, c.want)
		}
	}
}
