package cli

import (
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	ucli "github.com/urfave/cli/v2"
)

func testApp(action ucli.ActionFunc) *ucli.App {
	wait := []ucli.Flag{
		&ucli.StringFlag{Name: "socket"},
		&ucli.DurationFlag{Name: "timeout"},
		&ucli.DurationFlag{Name: "period", Value: 50 * time.Millisecond},
		&ucli.DurationFlag{Name: "grace", Value: 5 * time.Second},
		&ucli.BoolFlag{Name: "nonblock", Aliases: []string{"n"}},
		&ucli.IntFlag{Name: "conflict-exit-code", Aliases: []string{"E"}},
	}
	return &ucli.App{Name: "tool", Writer: &strings.Builder{}, Commands: []*ucli.Command{
		{Name: "run", ArgsUsage: "NAME -- command args...", Flags: wait, Action: action},
		{Name: "elect", ArgsUsage: "[-- command args...]", Flags: wait, Action: action},
		{Name: "query", ArgsUsage: "HOST:PORT", Flags: wait, Action: action},
	}}
}

// TestReorder: flags after positional arguments are read wherever that is
// unambiguous; what belongs to a child command is never touched.
func TestReorder(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"run NAME --timeout 1s -- cmd --timeout 2s", "run --timeout 1s NAME -- cmd --timeout 2s"},
		{"run NAME --timeout=1s -n cmd -x", "run --timeout=1s -n NAME cmd -x"},
		{"run -E3 NAME -- true", "run -E 3 NAME -- true"},
		{"run NAME -E3 -- true", "run -E 3 NAME -- true"},
		{"elect -- sh -c 'x' --socket s", "elect -- sh -c 'x' --socket s"},
		{"elect cmd --socket s", "elect cmd --socket s"},
		{"query HOST:1 --socket s --nonblock", "query --socket s --nonblock HOST:1"},
		{"query HOST:1 --bogus", "query --bogus HOST:1"},
		{"unknown HOST --socket s", "unknown HOST --socket s"},
	} {
		got := strings.Join(Reorder(testApp(nil), append([]string{"tool"}, strings.Fields(c.in)...))[1:], " ")
		if got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

// TestFlagsAfterArguments: through urfave/cli, a flag after NAME takes
// effect and the child's arguments arrive whole.
func TestFlagsAfterArguments(t *testing.T) {
	var got []string
	var timeout string
	var code int
	app := Prepare(testApp(func(c *ucli.Context) error {
		got, timeout, code = c.Args().Slice(), c.Duration("timeout").String(), c.Int("E")
		return nil
	}))
	if err := app.Run(Reorder(app, strings.Fields("tool run L --timeout 1s -E3 -- cmd --timeout 9s"))); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"L", "--", "cmd", "--timeout", "9s"}) || timeout != "1s" || code != 3 {
		t.Fatalf("args %q, timeout %s, -E %d", got, timeout, code)
	}
}

// TestHabits: a bare number for a duration, an unknown command, --version.
func TestHabits(t *testing.T) {
	app := Prepare(testApp(func(*ucli.Context) error { return nil }))
	err := app.Run(Reorder(app, strings.Fields("tool run L --timeout 1 -- true")))
	if Code(err) != ExitUsage || !strings.Contains(err.Error(), "did you mean 1s?") {
		t.Errorf("--timeout 1: %v", err)
	}
	// In the flag's own scale: the unit of its default.
	err = app.Run(Reorder(app, strings.Fields("tool run L --period 50 -- true")))
	if Code(err) != ExitUsage || !strings.Contains(err.Error(), "did you mean 50ms?") {
		t.Errorf("--period 50 (default 50ms): %v", err)
	}
	err = app.Run(Reorder(app, strings.Fields("tool run L --grace 2.5 -- true")))
	if Code(err) != ExitUsage || !strings.Contains(err.Error(), "did you mean 2.5s?") {
		t.Errorf("--grace 2.5 (default 5s): %v", err)
	}
	err = app.Run([]string{"tool", "run", "--conflict-exit-code", "x", "L"})
	if Code(err) != ExitUsage || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a bad integer is not a duration: %v", err)
	}
	out := &strings.Builder{}
	app.Writer = out
	if err := app.Run([]string{"tool", "--version"}); err != nil || !strings.HasPrefix(out.String(), "tool version ") {
		t.Errorf("--version: %q %v", out, err)
	}
	out.Reset()
	if err := app.Run([]string{"tool", "version"}); err != nil || !strings.HasPrefix(out.String(), "tool ") {
		t.Errorf("version: %q %v", out, err)
	}
	out.Reset()
	if err := app.Run([]string{"tool", "completion", "bash"}); err != nil || !strings.Contains(out.String(), "complete -o bashdefault -o default -F _tool_complete tool") {
		t.Errorf("completion bash: %q %v", out, err)
	}
	out.Reset()
	if err := app.Run([]string{"tool", "completion", "fish"}); err != nil || !strings.Contains(out.String(), "complete -c tool -a '(_tool_complete)'") {
		t.Errorf("completion fish: %q %v", out, err)
	}
	if err := app.Run([]string{"tool", "completion", "tcsh"}); Code(err) != ExitUsage {
		t.Errorf("completion tcsh: %v", err)
	}
}

func TestCheckAddr(t *testing.T) {
	for _, bad := range []string{"1=127.0.0.1:99999", "1=127.0.0.1:0", "1=h:x", "1=h:-1"} {
		if _, err := ParsePeers(bad); err == nil || !strings.Contains(err.Error(), "1 to 65535") {
			t.Errorf("ParsePeers(%q): %v", bad, err)
		}
	}
	if _, err := ResolveBind("127.0.0.1:99999"); err == nil {
		t.Error("--bind with port 99999 accepted")
	}
	if _, err := ResolveBind("127.0.0.1:0"); err != nil {
		t.Errorf("--bind with port 0 (any): %v", err)
	}
}

// TestVersionOf: the revision and the modified flag the toolchain records
// are printed; a build without them says so.
func TestVersionOf(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "1c996c618b7ed081578bc6458e45b99d00a8beeb"}}
	for _, c := range []struct {
		v        string
		settings []debug.BuildSetting
		want     string
	}{
		{"(devel)", rev, "(devel) 1c996c618b7e"},
		{"(devel)", append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), "(devel) 1c996c618b7e (modified)"},
		{"(devel)", append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"}), "(devel) 1c996c618b7e"},
		{"v1.2.0", nil, "v1.2.0"},
		{"v0.0.0-20261126-1c996c618b7e", rev, "v0.0.0-20261126-1c996c618b7e"},
		{"(devel)", nil, "(devel)" + noRevision},
		{"", nil, "(devel)" + noRevision},
	} {
		if got := versionOf(c.v, c.settings); got != c.want {
			t.Errorf("versionOf(%q, %v) = %q, want %q", c.v, c.settings, got, c.want)
		}
	}
	// A release build's stamp wins over what the toolchain recorded.
	defer func(s string) { stamped = s }(stamped)
	stamped = "v1.3.0-2-g1c996c6"
	if got := Version(); got != stamped {
		t.Errorf("Version() = %q with %q stamped", got, stamped)
	}
}
