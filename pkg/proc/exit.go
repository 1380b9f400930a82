package proc

import (
	"errors"
	"fmt"
	"os"
	"strings"
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

// Exit ends the process with the code the exit table prescribes for err:
// 0 for nil, an ExitError's code, 64 for any other error. A message goes
// to stderr, prefixed with the tool's name once; an ExitError without one
// (a child's own exit code) prints nothing.
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
