package simtest

import (
	"slices"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/sim"
)

// TestSeedFlags: importing the package hands sim.Seeds the flags' choice,
// 1..-seeds, or -seed alone to replay one.
func TestSeedFlags(t *testing.T) {
	defer func(n int, s uint64) { *seedCount, *seedOnly = n, s }(*seedCount, *seedOnly)
	*seedCount, *seedOnly = 3, 0
	if got := sim.Seeds(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("-seeds 3: got %v", got)
	}
	*seedOnly = 42
	if got := sim.Seeds(); !slices.Equal(got, []uint64{42}) {
		t.Fatalf("-seed 42: got %v", got)
	}
}

func TestEnvInt(t *testing.T) {
	t.Setenv("SIM_SEEDS_TEST", "1000")
	if got := envInt("SIM_SEEDS_TEST", 7); got != 1000 {
		t.Fatalf("SIM_SEEDS_TEST=1000: got %d", got)
	}
	for _, bad := range []string{"", "0", "-3", "many"} {
		t.Setenv("SIM_SEEDS_TEST", bad)
		if got := envInt("SIM_SEEDS_TEST", 7); got != 7 {
			t.Fatalf("SIM_SEEDS_TEST=%q: got %d, want the default 7", bad, got)
		}
	}
}
