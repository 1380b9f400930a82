package cli

import (
	"os"
	"strings"

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
	Exit(app.Name, prepare(app).Run(os.Args))
}

// prepare makes app's errors Main's to report, on stderr. Left to itself,
// urfave/cli answers a flag it cannot parse with "Incorrect Usage" and the
// whole help text on stdout, where a script reads data: in
// `lockd status --jsn | jq` the help would reach jq. Every command's
// usage errors become one line instead, exit 64, naming the flag as it is
// typed and where the help is.
func prepare(app *ucli.App) *ucli.App {
	app.ExitErrHandler = func(*ucli.Context, error) {}
	app.OnUsageError = usageError(app.Name)
	var walk func(prefix string, cmds []*ucli.Command)
	walk = func(prefix string, cmds []*ucli.Command) {
		for _, c := range cmds {
			if c.OnUsageError == nil {
				c.OnUsageError = usageError(prefix + " " + c.Name)
			}
			walk(prefix+" "+c.Name, c.Subcommands)
		}
	}
	walk(app.Name, app.Commands)
	return app
}

// usageError reports a command's flag error as a usage error (exit 64).
func usageError(command string) ucli.OnUsageErrorFunc {
	return func(_ *ucli.Context, err error, _ bool) error {
		return Exitf(ExitUsage, "%s (see '%s --help')", longFlag(err.Error()), command)
	}
}

// longFlag writes the flag that package flag's message names with one dash
// ("flag provided but not defined: -jsn") as users type it: --jsn, unless
// it is a one-letter flag.
func longFlag(msg string) string {
	for _, p := range []string{"not defined: -", "for flag -", "for -", "argument: -"} {
		i := strings.Index(msg, p)
		if i < 0 {
			continue
		}
		start := i + len(p)
		end := start
		for end < len(msg) && msg[end] != ':' && msg[end] != ' ' {
			end++
		}
		if end-start > 1 {
			msg = msg[:start] + "-" + msg[start:]
		}
		break
	}
	return msg
}
