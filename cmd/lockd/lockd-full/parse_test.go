package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/cmd/lockd/internal/ctl"
)

// TestFastRunMatchesCLI: wherever the quick parser takes a 'lockd run'
// command line, urfave/cli reads the same options from it; and the common
// forms are taken (otherwise the quick path would be dead code).
func TestFastRunMatchesCLI(t *testing.T) {
	cases := []parseCase{
		{[]string{"run", "L", "--", "true"}, nil, true},
		{[]string{"run", "L", "true"}, nil, true},
		{[]string{"run", "--", "L", "--", "true"}, nil, true},
		{[]string{"run", "--socket", "/s", "L", "--", "cmd", "-x", "--y"}, nil, true},
		{[]string{"run", "--socket=/s", "-n", "L", "--", "cmd"}, nil, true},
		{[]string{"run", "-socket", "/s", "--nonblock", "-E", "3", "L", "--", "cmd"}, nil, true},
		{[]string{"run", "--nonblock=false", "--conflict-exit-code=0x10", "L", "--", "cmd"}, nil, true},
		{[]string{"run", "--timeout", "1.5s", "--kill-grace=200ms", "--shell", "L", "--", "echo", "$x"}, nil, true},
		{[]string{"run", "--json", "--timeout=0", "L", "cmd"}, nil, true},
		{[]string{"run", "-n", "-n=false", "-n", "L", "--", "cmd"}, nil, true},
		{[]string{"run", "--socket", "/a", "--socket", "/b", "L", "--", "cmd"}, nil, true},
		{[]string{"run", "L", "--", "cmd", "--help"}, nil, true},
		{[]string{"run", "L", "--nonblock", "--", "cmd"}, nil, true},
		{[]string{"run", "-", "--", "cmd"}, nil, true},
		{[]string{"run"}, nil, true},
		{[]string{"run", "L"}, nil, true},
		{[]string{"run", "L", "--", "true"}, map[string]string{"LOCKD_SOCKET": "/env.sock"}, true},
		{[]string{"run", "--socket", "/flag", "L", "--", "true"}, map[string]string{"LOCKD_SOCKET": "/env.sock"}, true},
		{[]string{"run", "L", "--", "true"}, map[string]string{"XDG_RUNTIME_DIR": "/run/user/7"}, true},
		// Left to urfave/cli:
		{[]string{"run", "L", "--", "true"}, map[string]string{"LOCKD_TIMEOUT": "2s"}, false},
		{[]string{"run", "L", "--", "true"}, map[string]string{"LOCKD_NONBLOCK": ""}, false},
		{[]string{"run", "--help", "L"}, nil, false},
		{[]string{"run", "-h"}, nil, false},
		{[]string{"run", "--bogus", "L", "--", "true"}, nil, false},
		{[]string{"run", "--timeout", "soon", "L", "--", "true"}, nil, false},
		{[]string{"run", "-E", "x", "L", "--", "true"}, nil, false},
		{[]string{"run", "--nonblock=maybe", "L", "--", "true"}, nil, false},
		{[]string{"run", "--socket"}, nil, false},
		{[]string{"run", "---socket", "/s", "L"}, nil, false},
		{[]string{"run", "-=x", "L"}, nil, false},
		{[]string{"run", "L", "--", "true", "--generate-bash-completion"}, nil, false},
		{[]string{"hold", "L"}, nil, false},
		{[]string{"status"}, nil, false},
		{nil, nil, false},
	}
	matchCLI(t, cases, "run", ctl.ParseRun, func(ctx *ucli.Context) ctl.RunOpts {
		return ctl.RunOpts{WaitOpts: waitOptsFrom(ctx), KillGrace: ctx.Duration("kill-grace"), Shell: ctx.Bool("shell"), Args: ctx.Args().Slice()}
	})
}

// parseCase is a command line, its environment, and whether the quick
// parser must take it.
type parseCase struct {
	args []string
	env  map[string]string
	fast bool
}

// matchCLI checks quick, a quick parser, against urfave/cli's reading of
// the same command lines, read into the same options by fromCLI as the
// action of command cmd.
func matchCLI[T any](t *testing.T, cases []parseCase, cmd string, quick func([]string) (T, bool), fromCLI func(*ucli.Context) T) {
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			for _, k := range []string{"LOCKD_SOCKET", "LOCKD_TIMEOUT", "LOCKD_NONBLOCK", "LOCKD_JSON", "LOCKD_KILL_GRACE", "XDG_RUNTIME_DIR"} {
				t.Setenv(k, "")
				unsetenv(t, k)
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			fast, ok := quick(c.args)
			if ok != c.fast {
				t.Fatalf("quick parser took it: %v, want %v", ok, c.fast)
			}
			if !ok {
				return
			}
			var slow T
			called := false
			app := newApp(runCmd)
			for _, command := range app.Commands {
				if command.Name == cmd {
					command.Action = func(ctx *ucli.Context) error {
						called = true
						slow = fromCLI(ctx)
						return nil
					}
				}
			}
			app.ExitErrHandler = func(*ucli.Context, error) {}
			if err := app.Run(append([]string{"lockd"}, c.args...)); err != nil || !called {
				t.Fatalf("urfave/cli: error %v, action called %v", err, called)
			}
			// (%+v: no arguments is the same whether nil or empty)
			if f, s := fmt.Sprintf("%+v", fast), fmt.Sprintf("%+v", slow); f != s {
				t.Fatalf("quick parser %s, urfave/cli %s", f, s)
			}
		})
	}
}

// unsetenv removes k for the rest of the test (t.Setenv restores it).
func unsetenv(t *testing.T, k string) {
	t.Helper()
	if err := os.Unsetenv(k); err != nil {
		t.Fatal(err)
	}
}

// TestFastHoldMatchesCLI: as TestFastRunMatchesCLI, for 'lockd hold'.
func TestFastHoldMatchesCLI(t *testing.T) {
	cases := []parseCase{
		{[]string{"hold", "L"}, nil, true},
		{[]string{"hold", "--socket", "/s", "--json", "L"}, nil, true},
		{[]string{"hold", "--json=false", "-n", "-E", "0x10", "--timeout=2s", "L", "extra"}, nil, true},
		{[]string{"hold", "--", "L"}, nil, true},
		{[]string{"hold", "L"}, map[string]string{"LOCKD_SOCKET": "/env.sock"}, true},
		// run's flags are not hold's; a LOCKD_ variable of a flag hold
		// does not have changes nothing.
		{[]string{"hold", "L"}, map[string]string{"LOCKD_KILL_GRACE": "1s"}, true},
		// Left to urfave/cli:
		{[]string{"hold", "--shell", "L"}, nil, false},
		{[]string{"hold", "--kill-grace", "1s", "L"}, nil, false},
		{[]string{"hold", "L"}, map[string]string{"LOCKD_JSON": "1"}, false},
		{[]string{"hold", "--help"}, nil, false},
		{[]string{"hold", "--timeout", "soon", "L"}, nil, false},
		{[]string{"hold", "L", "--generate-bash-completion"}, nil, false},
		{[]string{"run", "L", "--", "true"}, nil, false},
	}
	matchCLI(t, cases, "hold", ctl.ParseHold, func(ctx *ucli.Context) ctl.HoldOpts {
		return ctl.HoldOpts{WaitOpts: waitOptsFrom(ctx), JSON: ctx.Bool("json"), Args: ctx.Args().Slice()}
	})
}
