// Package quick runs the common forms of `lockd run` from its package
// initialisation, before the daemon's packages initialise.
//
// `lockd run NAME -- cmd` is started once per critical section, so its
// start-up is most of what it costs. Go initialises every package linked
// into a binary before main, and lockd's daemon links in urfave/cli,
// go-sockaddr's templates (text/template, regexp), net, log/slog, colour
// and the AES-GCM wire: initialising them is page faults and allocations
// that `lockd run` never uses. The language fixes the order (the Go spec,
// "Package initialization": each step initialises the first package, by
// import path, whose imports are all initialised), and this package's
// imports — ctl, proc and the few standard packages they use — are ready
// long before net or urfave/cli are, so its init runs first. When the
// command line is one ParseRun takes, it runs the command and exits the
// process there; anything else (serve, help, errors, rarer flags) returns,
// and main parses it with urfave/cli as usual.
//
// Its imports must stay light: TestQuickRunSkipsHeavyInit in package
// main checks, with GODEBUG=inittrace=1, that none of the heavy packages
// initialise in a `lockd run`.
package quick

import (
	"os"

	"github.com/roundtable-go/roundtable/cmd/lockd/internal/ctl"
	"github.com/roundtable-go/roundtable/pkg/proc"
)

func init() {
	o, ok := ctl.ParseRun(os.Args[1:])
	if !ok {
		return
	}
	// Run waits in system calls (ppoll), not on channels or the runtime's
	// poller, so the main goroutine, which the runtime keeps on the main
	// thread while packages initialise, can run it without handing its
	// thread's P to another thread at every wait.
	proc.Exit(ctl.Tool, ctl.Run(o))
}
