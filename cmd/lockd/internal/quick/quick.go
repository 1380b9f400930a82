// Package quick runs the common forms of `lockd run` and `lockd hold`
// (ctl.Quick) from its package initialisation in lockd-full, the complete
// program, before the daemon's packages initialise. (lockd, the front,
// runs them from main: it links nothing heavy, and see there why not
// from init.)
//
// `lockd run NAME -- cmd` is started once per critical section, so its
// start-up is most of what it costs. lockd-full links urfave/cli,
// go-sockaddr's templates (text/template, regexp), net, log/slog, colour
// and the AES-GCM wire, and Go initialises every package linked into a
// binary before main: initialising those is page faults and allocations
// that a `lockd run` never uses. The language fixes the order (the Go
// spec, "Package initialization": each step initialises the first
// package, by import path, whose imports are all initialised), and this
// package's imports — ctl, proc and the few standard packages they use —
// are ready long before net or urfave/cli are, so its init runs first.
// When the command line is one ctl.Quick takes, init runs it and exits the
// process there; anything else (serve, help, errors, rarer flags) returns,
// and main parses it with urfave/cli as usual.
//
// Its imports must stay light: TestQuickRunSkipsHeavyInit checks, with
// GODEBUG=inittrace=1, that none of the heavy packages initialise in a
// `lockd-full run` or `lockd-full hold`.
package quick

import (
	"os"

	"github.com/roundtable-go/roundtable/cmd/lockd/internal/ctl"
	"github.com/roundtable-go/roundtable/pkg/proc"
)

func init() {
	if ok, err := ctl.Quick(os.Args[1:]); ok {
		proc.Exit(ctl.Tool, err)
	}
}
