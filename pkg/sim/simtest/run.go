package simtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/sim"
)

// EverySeed runs run on each seed sim.Seeds chooses and stops t at the
// first error, with the seed and the command that replays it alone. It
// returns how many seeds ran.
func EverySeed(t testing.TB, run func(seed uint64) error) int {
	t.Helper()
	return EverySeedOf(t, sim.Seeds(), run)
}

// EverySeedOf is EverySeed over the given seeds (AtLeast's, say).
func EverySeedOf(t testing.TB, seeds []uint64, run func(seed uint64) error) int {
	t.Helper()
	for _, seed := range seeds {
		if err := run(seed); err != nil {
			t.Fatalf("seed %d: %v\nreplay: %s", seed, err, Replay(t, seed))
		}
	}
	return len(seeds)
}

// AtLeast returns the seeds sim.Seeds chooses, 1..n when it chooses
// fewer, unless -seed replays one.
func AtLeast(n int) []uint64 {
	s := sim.Seeds()
	if len(s) == 1 || len(s) >= n {
		return s
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// Catch runs run on seeds 1..n with a planted bug switched on, and counts
// the runs whose error contains one of want (a checker's verdict; with no
// want, any error). It fails t when none does, and logs how many did and the first such error.
// It returns the count.
func Catch(t testing.TB, bug string, n int, run func(seed uint64) error, want ...string) int {
	t.Helper()
	caught, _, first := catch(n, 0, "seed", run, want)
	if caught == 0 {
		t.Fatalf("planted bug (%s) never caught in %d seeds", bug, n)
	}
	t.Logf("planted bug (%s) caught in %d/%d seeds, e.g. %v", bug, caught, n, first)
	return caught
}

// CatchOne runs run on seeds 1..n with a planted bug switched on until
// one run fails with an error that contains one of want; it fails t when
// none does, and logs the seed that caught it.
func CatchOne(t testing.TB, bug string, n int, run func(seed uint64) error, want ...string) {
	t.Helper()
	caught, _, first := catch(n, 1, "seed", run, want)
	if caught == 0 {
		t.Fatalf("planted bug (%s) never caught in %d seeds", bug, n)
	}
	t.Logf("planted bug (%s) caught: %v", bug, first)
}

// CatchSome runs run on runs 1..n with a planted bug switched on until
// enough of them fail with an error that contains one of want, so that a
// slow sweep stops once the catch is shown not to be a fluke. It fails t
// when none does, and logs how many did in how many runs and the first
// such error. It returns the count.
func CatchSome(t testing.TB, bug string, n, enough int, run func(i uint64) error, want ...string) int {
	t.Helper()
	caught, runs, first := catch(n, enough, "run", run, want)
	if caught == 0 {
		t.Fatalf("planted bug (%s) never caught in %d runs", bug, n)
	}
	t.Logf("planted bug (%s) caught in %d of the first %d runs, e.g. %v", bug, caught, runs, first)
	return caught
}

// catch runs run on 1..n until enough runs (0: no limit) failed with one
// of want; it returns how many did, how many ran and the first, prefixed
// with its label and number ("seed 3: ...") unless it says so already.
func catch(n, enough int, label string, run func(i uint64) error, want []string) (caught, runs int, first error) {
	for i := uint64(1); i <= uint64(n) && (enough == 0 || caught < enough); i++ {
		runs++
		if err := run(i); err != nil && containsAny(err.Error(), want) {
			caught++
			if first == nil {
				first = err
				if name := fmt.Sprintf("%s %d", label, i); !strings.HasPrefix(err.Error(), name+" ") {
					first = fmt.Errorf("%s: %w", name, err)
				}
			}
		}
	}
	return caught, runs, first
}

// containsAny: s contains one of subs; any s when there are none.
func containsAny(s string, subs []string) bool {
	if len(subs) == 0 {
		return true
	}
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// Replay is the command that runs t again on seed alone, from the
// module's root: go test ./pkg/x -run '^TestY$/^sub$' -seed N.
func Replay(t testing.TB, seed uint64) string {
	var run []string
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	return fmt.Sprintf("go test %s -run '%s' -seed %d", pkgDir(), strings.Join(run, "/"), seed)
}

// pkgDir is the test's package directory as go test takes it from the
// module's root ("./pkg/mutex"), or "." when there is no go.mod above.
func pkgDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for root := wd; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(root, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		up := filepath.Dir(root)
		if up == root {
			return "."
		}
		root = up
	}
}
