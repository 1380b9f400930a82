// Package quick runs the common forms of `lockd run` and `lockd hold`
// from its package initialisation, before the daemon's packages
// initialise.
//
// `lockd run NAME -- cmd` is started once per critical section, so its
// start-up is most of what it costs. Two programs import this package:
//
//   - lockd, the front (cmd/lockd), which links nothing else of lockd's:
//     a command line this package does not take is handed to lockd-full.
//   - lockd-full, the complete program, which links the daemon too:
//     urfave/cli, go-sockaddr's templates (text/template, regexp), net,
//     log/slog, colour and the AES-GCM wire. Go initialises every package
//     linked into a binary before main, and initialising those is page
//     faults and allocations that a `lockd run` never uses. The language
//     fixes the order (the Go spec, "Package initialization": each step
//     initialises the first package, by import path, whose imports are all
//     initialised), and this package's imports — ctl, proc and the few
//     standard packages they use — are ready long before net or urfave/cli
//     are, so its init runs first there as well.
//
// When the command line is one ParseRun or ParseHold takes, init runs it
// and exits the process there; anything else (serve, help, errors, rarer
// flags) returns to main.
//
// Its imports must stay light: TestQuickRunSkipsHeavyInit checks, with
// GODEBUG=inittrace=1, that none of the heavy packages initialise in a
// `lockd run` or `lockd hold`, and TestFront that the front links none of
// the daemon's modules.
package quick

import (
	"os"

	"github.com/roundtable-go/roundtable/cmd/lockd/internal/ctl"
	"github.com/roundtable-go/roundtable/pkg/proc"
)

func init() {
	if o, ok := ctl.ParseRun(os.Args[1:]); ok {
		// Run waits in system calls (ppoll), not on channels or the
		// runtime's poller, so the main goroutine, which the runtime keeps
		// on the main thread while packages initialise, can run it without
		// handing its thread's P to another thread at every wait.
		proc.Exit(ctl.Tool, ctl.Run(o))
	}
	if o, ok := ctl.ParseHold(os.Args[1:]); ok {
		// `lockd hold` is also started once per critical section (as a
		// coprocess); a NAME that needs an error message is left to
		// urfave/cli.
		if name, err := ctl.CheckName(o.Args); err == nil {
			proc.Exit(ctl.Tool, hold(o, name))
		}
	}
}

// hold is 'lockd hold': one line when acquired, one when released or
// lost, as text or (--json) JSON lines.
func hold(o ctl.HoldOpts, name string) error {
	print := func(r ctl.Reply) {
		if o.JSON {
			os.Stdout.Write(r.Line())
		} else {
			os.Stdout.WriteString(r.String() + "\n")
		}
	}
	last, err := ctl.Hold(o.WaitOpts, name, print)
	if last.Event != "" {
		print(last)
	}
	return err
}
