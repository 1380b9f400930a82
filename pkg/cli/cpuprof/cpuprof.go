// Package cpuprof starts a CPU profile named by an environment variable:
// a developer's tool for the benchmarks (ticketd's daemons, mcast bench),
// never a flag. It is a package of its own so that only the tools that
// use it link runtime/pprof.
package cpuprof

import (
	"os"
	"runtime/pprof"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// Start writes a CPU profile to file until stop is called, or does
// nothing when file is empty. env names the variable file came from, for
// the error (exit 64) when it cannot be written.
func Start(env, file string) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, cli.Exitf(cli.ExitUsage, "%s: %v", env, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, cli.Exitf(cli.ExitUsage, "%s: %v", env, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
