package mcastd

import (
	"os"
	"runtime/pprof"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// CPUProfile writes a CPU profile of the bench to file when it is set
// (MCAST_BENCH_CPUPROFILE, for 'go tool pprof'; not a flag: it is for
// whoever works on mcast's speed, not for users). stop ends it.
func CPUProfile(file string) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, cli.Exitf(cli.ExitUsage, "MCAST_BENCH_CPUPROFILE: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, cli.Exitf(cli.ExitUsage, "MCAST_BENCH_CPUPROFILE: %v", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
