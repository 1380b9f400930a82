package sim

import (
	"math/rand/v2"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// DefaultSeeds is how many seeds a property test runs when neither -seeds
// nor SIM_SEEDS says otherwise: few enough that a plain `go test ./...`
// ends well within Go's default 10-minute timeout on two cores.
// scripts/test.sh asks for 1,000 (SIM_SEEDS=1000).
const DefaultSeeds = 100

// seedSource is what Seeds returns; pkg/sim/simtest installs it.
var seedSource func() []uint64

// SetSeeds installs the function Seeds calls. pkg/sim/simtest calls it
// when a test binary starts, with the seeds its test flags (-seeds, -seed,
// SIM_SEEDS) choose; the flags live there so that no production binary
// that links the simulator carries them.
func SetSeeds(f func() []uint64) { seedSource = f }

// Seeds returns the seeds a property test runs: 1..-seeds, or just -seed.
// It panics in a test binary that does not import pkg/sim/simtest, rather
// than quietly run a default count that SIM_SEEDS was meant to change.
func Seeds() []uint64 {
	if seedSource == nil {
		panic(`sim.Seeds: the test flags are in pkg/sim/simtest; add import _ "github.com/roundtable-go/roundtable/pkg/sim/simtest" to a _test.go file of this package`)
	}
	return seedSource()
}

// RandomPartition splits the nodes into two non-empty groups chosen with r
// and cuts every link between them.
func (s *Sim[M]) RandomPartition(r *rand.Rand) {
	ids := s.IDs()
	if len(ids) < 2 {
		return
	}
	perm := r.Perm(len(ids))
	cut := 1 + r.IntN(len(ids)-1)
	var a, b []node.ID
	for i, p := range perm {
		if i < cut {
			a = append(a, ids[p])
		} else {
			b = append(b, ids[p])
		}
	}
	s.Partition(a, b)
}

// Live counts the nodes that are running (paused ones included).
func (s *Sim[M]) Live() int {
	n := 0
	for _, id := range s.ids {
		if s.Alive(id) {
			n++
		}
	}
	return n
}
