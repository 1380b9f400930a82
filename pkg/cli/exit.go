package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Exit codes; see the package documentation.
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

// ExitError carries the process exit code with the error.
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

// Main runs a urfave/cli application and exits with the code the exit
// table prescribes: an ExitError's code, or 64 for the framework's own
// errors (unknown flags and the like). Messages go to stderr, prefixed with
// the tool's name once.
func Main(app *ucli.App) {
	app.ExitErrHandler = func(*ucli.Context, error) {}
	Exit(app.Name, app.Run(os.Args))
}

// Exit ends the process as Main does for an action's result err.
func Exit(tool string, err error) {
	if err == nil {
		os.Exit(ExitOK)
	}
	code := Code(err)
	if code == 1 {
		code = ExitUsage
	}
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, tool+":") {
			msg = tool + ": " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
	}
	os.Exit(code)
}
