package ctl

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/proc"
)

// Quick runs the command line args (without the program's name) when it
// is one of the common forms of 'lockd run' or 'lockd hold' that ParseRun
// and ParseHold take, and returns true with what the command returned; for
// any other command line it returns false at once.
func Quick(args []string) (bool, error) {
	if o, ok := ParseRun(args); ok {
		return true, Run(o)
	}
	if o, ok := ParseHold(args); ok {
		// A NAME that needs an error message is left to urfave/cli.
		if name, err := CheckName(o.Args); err == nil {
			return true, hold(o, name)
		}
	}
	return false, nil
}

// hold is 'lockd hold' with its output: one line when acquired, one when
// released or lost, as text or (--json) JSON lines, each in one write.
func hold(o HoldOpts, name string) error {
	print := func(r Reply) {
		if o.JSON {
			os.Stdout.Write(r.Line())
		} else {
			os.Stdout.WriteString(r.String() + "\n")
		}
	}
	last, err := Hold(o.WaitOpts, name, print)
	if last.Event != "" {
		print(last)
	}
	return err
}

// ParseRun parses the common forms of 'lockd run' without building the
// urfave/cli application: `lockd run [--socket P] [--timeout D] [-n]
// [-E N] [--kill-grace D] [--shell] [--json] NAME -- command args...`.
// It reads flags the way urfave/cli does (Go's flag syntax: -f or --f,
// --f=v or --f v, parsing stops at the first argument that is not a flag
// or after "--") and gives up — ok false, urfave/cli then parses the
// command line itself — on anything else: another subcommand, an unknown
// flag, help, a value that does not parse, a LOCKD_* variable other than
// LOCKD_SOCKET in the environment, or bash completion. So errors, help and
// every rarer form keep urfave/cli's exact behaviour, and the common form
// skips building every command's flags (TestFastRunMatchesCLI compares
// the two parsers).
func ParseRun(args []string) (RunOpts, bool) {
	o := RunOpts{WaitOpts: WaitOpts{Conflict: proc.ExitBusy}, KillGrace: DefaultKillGrace}
	var json bool // accepted, as every client takes it; run prints no events
	rest, ok := parseQuick(args, "run", quickFlags{wait: &o.WaitOpts, json: &json, shell: &o.Shell, grace: &o.KillGrace})
	o.Args = rest
	return o, ok
}

// HoldOpts is a parsed 'lockd hold'.
type HoldOpts struct {
	WaitOpts
	JSON bool     // print JSON lines
	Args []string // NAME, as given
}

// ParseHold is ParseRun for 'lockd hold [--socket P] [--timeout D] [-n]
// [-E N] [--json] NAME', with the same rules.
func ParseHold(args []string) (HoldOpts, bool) {
	o := HoldOpts{WaitOpts: WaitOpts{Conflict: proc.ExitBusy}}
	rest, ok := parseQuick(args, "hold", quickFlags{wait: &o.WaitOpts, json: &o.JSON})
	o.Args = rest
	return o, ok
}

// quickFlags are where parseQuick stores the flags; a nil field is a flag
// the command does not have.
type quickFlags struct {
	wait  *WaitOpts
	json  *bool
	shell *bool
	grace *time.Duration
}

// parseQuick reads `cmd [flags] args...` as urfave/cli would (see
// ParseRun) and returns the arguments after the flags.
func parseQuick(args []string, cmd string, f quickFlags) ([]string, bool) {
	if len(args) == 0 || args[0] != cmd || args[len(args)-1] == "--generate-bash-completion" {
		return nil, false
	}
	// (a switch, not a map: a map of this size is one more allocation of
	// its own size class, so one more page touched in every run)
	has := func(name string) bool {
		switch name {
		case "socket", "json", "timeout", "nonblock", "n", "conflict-exit-code", "E":
			return true
		case "shell":
			return f.shell != nil
		case "kill-grace":
			return f.grace != nil
		}
		return false
	}
	for _, name := range []string{"json", "timeout", "nonblock", "conflict-exit-code", "kill-grace", "shell"} {
		if _, set := os.LookupEnv(proc.Env(Tool, name)); set && has(name) {
			return nil, false
		}
	}
	f.wait.Socket = proc.DefaultSocket(Tool)
	if v, set := os.LookupEnv(proc.Env(Tool, "socket")); set {
		f.wait.Socket = v
	}
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		name := a[1:]
		if name[0] == '-' {
			name = name[1:]
		}
		if name == "" || name[0] == '-' || name[0] == '=' {
			return nil, false
		}
		name, value, hasValue := strings.Cut(name, "=")
		if !has(name) {
			return nil, false
		}
		switch name {
		case "nonblock", "n", "shell", "json":
			b := true
			if hasValue {
				var err error
				if b, err = strconv.ParseBool(value); err != nil {
					return nil, false
				}
			}
			switch name {
			case "nonblock", "n":
				f.wait.NonBlock = b
			case "shell":
				*f.shell = b
			case "json":
				*f.json = b
			}
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, false
			}
			i++
			value = args[i]
		}
		var err error
		switch name {
		case "socket":
			f.wait.Socket = value
		case "timeout":
			f.wait.Timeout, err = time.ParseDuration(value)
		case "kill-grace":
			*f.grace, err = time.ParseDuration(value)
		case "conflict-exit-code", "E":
			var n int64
			n, err = strconv.ParseInt(value, 0, strconv.IntSize)
			f.wait.Conflict = int(n)
		}
		if err != nil {
			return nil, false
		}
	}
	return args[i:], true
}
