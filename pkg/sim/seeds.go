package sim

import (
	"flag"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// DefaultSeeds is how many seeds a property test runs when neither -seeds
// nor SIM_SEEDS says otherwise: few enough that a plain `go test ./...`
// ends well within Go's default 10-minute timeout on two cores.
// scripts/test.sh asks for 1,000 (SIM_SEEDS=1000).
const DefaultSeeds = 100

// The flags every property test shares: how many seeds to run, or one seed
// to replay. SIM_SEEDS sets the default count; Seeds is the one place it
// is read.
var (
	seedCount = flag.Int("seeds", envInt("SIM_SEEDS", DefaultSeeds), "simulator seeds per property test (env SIM_SEEDS)")
	seedOnly  = flag.Uint64("seed", 0, "run only this simulator seed (replay a failure)")
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// Seeds returns the seeds a property test runs: 1..-seeds, or just -seed.
func Seeds() []uint64 {
	if *seedOnly != 0 {
		return []uint64{*seedOnly}
	}
	out := make([]uint64, *seedCount)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
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
