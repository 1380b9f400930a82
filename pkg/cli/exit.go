package cli

import (
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/proc"
)

// The exit code table and child supervision live in package proc, which
// imports only the standard library; they are re-exported here so that
// every tool speaks of them through one package.
const (
	ExitOK          = proc.ExitOK
	ExitUsage       = proc.ExitUsage
	ExitUnavailable = proc.ExitUnavailable
	ExitBusy        = proc.ExitBusy
	ExitLost        = proc.ExitLost
	ExitNoPerm      = proc.ExitNoPerm
	ExitCannotExec  = proc.ExitCannotExec
	ExitNotFound    = proc.ExitNotFound
)

type (
	// ExitError carries the process exit code with the error.
	ExitError = proc.ExitError
	// Child is a supervised child command (see proc.StartChild).
	Child = proc.Child
)

// Exitf returns an ExitError with a formatted message.
func Exitf(code int, format string, args ...any) error { return proc.Exitf(code, format, args...) }

// Code is the exit code for err: 0 for nil, the ExitError code, or 1.
func Code(err error) int { return proc.Code(err) }

// Exit ends the process as Main does for an action's result err.
func Exit(tool string, err error) { proc.Exit(tool, err) }

// StartChild starts a supervised child command (see proc.StartChild).
func StartChild(args []string, env []string) (*Child, error) { return proc.StartChild(args, env) }

// Main runs a urfave/cli application and exits with the code the exit
// table prescribes: an ExitError's code, or 64 for the framework's own
// errors (unknown flags and the like). Messages go to stderr, prefixed with
// the tool's name once.
func Main(app *ucli.App) {
	app.ExitErrHandler = func(*ucli.Context, error) {}
	Exit(app.Name, app.Run(os.Args))
}
