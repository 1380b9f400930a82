// Package simtest holds the test flags of the simulator's property tests,
// so that no production binary carries them: -seeds N runs seeds 1..N
// (default SIM_SEEDS, else sim.DefaultSeeds) and -seed S replays seed S
// alone. A package whose tests call sim.Seeds imports it for its effect,
// in a _test.go file:
//
//	import _ "github.com/roundtable-go/roundtable/pkg/sim/simtest"
//
// Only tests import it.
package simtest

import (
	"flag"
	"os"
	"strconv"

	"github.com/roundtable-go/roundtable/pkg/sim"
)

var (
	seedCount = flag.Int("seeds", envInt("SIM_SEEDS", sim.DefaultSeeds), "simulator seeds per property test (env SIM_SEEDS)")
	seedOnly  = flag.Uint64("seed", 0, "run only this simulator seed (replay a failure)")
)

func init() { sim.SetSeeds(seeds) }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// seeds reads the flags when a test asks, after the test binary parsed
// them: 1..-seeds, or just -seed.
func seeds() []uint64 {
	if *seedOnly != 0 {
		return []uint64{*seedOnly}
	}
	out := make([]uint64, *seedCount)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}
