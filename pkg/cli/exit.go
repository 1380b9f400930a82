package cli

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
)

// Exit codes, the same in every binary (see the package documentation).
const (
	ExitOK          = 0
	ExitUsage       = 64
	ExitUnavailable = 69
	ExitBusy        = 75
	ExitLost        = 76
	ExitNoPerm      = 77
	ExitCannotExec  = 126
	ExitNotFound    = 127
)

// ExitError carries the process exit code with the error. An ExitError
// without Err (a child's own exit code) prints nothing.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exitf returns an ExitError with a formatted message.
func Exitf(code int, format string, args ...any) error {
	return &ExitError{Code: code, Err: fmt.Errorf(format, args...)}
}

// Code is the exit code for err: 0 for nil, the ExitError code, or 1.
func Code(err error) int {
	if err == nil {
		return 0
	}
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return 1
}

// Exit ends the process with the code the exit table prescribes for err:
// 0 for nil, an ExitError's code, 64 for any other error. A message goes
// to stderr, prefixed with the tool's name once.
func Exit(tool string, err error) {
	if err == nil {
		os.Exit(ExitOK)
	}
	code := ExitUsage // an error without a code is urfave/cli's: a usage error
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code // a child's 1 stays 1
	}
	if l := exitLog.Load(); l != nil && (ee == nil || ee.Err != nil) {
		l.Error(strings.TrimPrefix(err.Error(), tool+": "), "exit", code)
	} else if ee == nil || ee.Err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, tool+":") {
			msg = tool + ": " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
	}
	os.Exit(code)
}

// Main runs a urfave/cli application and exits with the code the exit
// table prescribes: an ExitError's code, or 64 for the framework's own
// errors (unknown flags and the like). Messages go to stderr, prefixed with
// the tool's name once.
func Main(app *ucli.App) {
	RunWatchdog()
	Exit(app.Name, Prepare(app).Run(Reorder(app, os.Args)))
}

// Prepare makes app's errors Main's to report, on stderr. Left to itself,
// urfave/cli answers a flag it cannot parse with "Incorrect Usage" and the
// whole help text on stdout, where a script reads data: in
// `lockd status --jsn | jq` the help would reach jq. Every command's
// usage errors become one line instead, exit 64, naming the flag as it is
// typed and where the help is.
//
// It also gives every tool what users expect of any: --version and
// version, completion bash|zsh, and "unknown command" for a command that
// does not exist.
func Prepare(app *ucli.App) *ucli.App {
	app.ExitErrHandler = func(*ucli.Context, error) {}
	app.OnUsageError = usageError(app.Name, app.Flags)
	app.EnableBashCompletion = true
	if app.Version == "" {
		app.Version = Version()
	}
	app.CommandNotFound = func(c *ucli.Context, name string) {
		Exit(app.Name, Exitf(ExitUsage, "unknown command %q (see '%s --help')", name, app.Name))
	}
	if findCommand(app.Commands, "version") == nil {
		app.Commands = append(app.Commands, versionCommand(app), completionCommand(app))
	}
	var walk func(prefix string, cmds []*ucli.Command)
	walk = func(prefix string, cmds []*ucli.Command) {
		for _, c := range cmds {
			if c.OnUsageError == nil {
				c.OnUsageError = usageError(prefix+" "+c.Name, c.Flags)
			}
			walk(prefix+" "+c.Name, c.Subcommands)
		}
	}
	walk(app.Name, app.Commands)
	return app
}

// usageError reports a command's flag error as a usage error (exit 64).
func usageError(command string, flags []ucli.Flag) ucli.OnUsageErrorFunc {
	return func(_ *ucli.Context, err error, _ bool) error {
		return Exitf(ExitUsage, "%s%s (see '%s --help')", longFlag(err.Error()), durationHint(err.Error(), flags), command)
	}
}

var invalidValue = regexp.MustCompile(`invalid value "([0-9]+(?:\.[0-9]+)?)" for flag -+([a-zA-Z0-9-]+)`)

// durationHint answers a bare number given to a duration flag (flock's
// habit: --timeout 1) with the unit it needs, in the flag's own scale:
// the unit of its default (--period 50, default 50ms: "did you mean
// 50ms?"), seconds for a flag without one.
func durationHint(msg string, flags []ucli.Flag) string {
	m := invalidValue.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	f, ok := findFlag(flags, m[2]).(*ucli.DurationFlag)
	if !ok {
		return ""
	}
	unit := "s"
	switch d := f.Value; {
	case d <= 0:
	case d < time.Millisecond:
		unit = "µs"
	case d < time.Second:
		unit = "ms"
	case d >= time.Hour:
		unit = "h"
	case d >= time.Minute:
		unit = "m"
	}
	return fmt.Sprintf(": a duration needs a unit, did you mean %s%s?", m[1], unit)
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
