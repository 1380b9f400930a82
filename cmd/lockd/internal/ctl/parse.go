package ctl

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/proc"
)

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
	if len(args) == 0 || args[0] != "run" || args[len(args)-1] == "--generate-bash-completion" {
		return o, false
	}
	for _, f := range []string{"json", "timeout", "nonblock", "conflict-exit-code", "kill-grace", "shell"} {
		if _, set := os.LookupEnv(proc.Env(Tool, f)); set {
			return o, false
		}
	}
	o.Socket = proc.DefaultSocket(Tool)
	if v, set := os.LookupEnv(proc.Env(Tool, "socket")); set {
		o.Socket = v
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
			return o, false
		}
		name, value, hasValue := strings.Cut(name, "=")
		switch name {
		case "nonblock", "n", "shell", "json":
			b := true
			if hasValue {
				var err error
				if b, err = strconv.ParseBool(value); err != nil {
					return o, false
				}
			}
			switch name {
			case "nonblock", "n":
				o.NonBlock = b
			case "shell":
				o.Shell = b
			}
			continue
		case "socket", "timeout", "kill-grace", "conflict-exit-code", "E":
		default:
			return o, false
		}
		if !hasValue {
			if i+1 >= len(args) {
				return o, false
			}
			i++
			value = args[i]
		}
		var err error
		switch name {
		case "socket":
			o.Socket = value
		case "timeout":
			o.Timeout, err = time.ParseDuration(value)
		case "kill-grace":
			o.KillGrace, err = time.ParseDuration(value)
		case "conflict-exit-code", "E":
			var n int64
			n, err = strconv.ParseInt(value, 0, strconv.IntSize)
			o.Conflict = int(n)
		}
		if err != nil {
			return o, false
		}
	}
	o.Args = args[i:]
	return o, true
}
