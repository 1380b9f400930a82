package cli

import (
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// What every start of every tool does before its command runs, measured
// by scripts/bench-start.sh (docs/performance.md, "What the operations
// features cost a `lockd run` start"): the version string (--version's
// module version and VCS revision, read from the build information on
// each start unless a release build stamped it) and Prepare's other
// additions (the version and completion commands, usage-error handlers).

var sink any

func BenchmarkVersion(b *testing.B) {
	for b.Loop() {
		sink = Version()
	}
}

func BenchmarkVersionStamped(b *testing.B) {
	defer func(s string) { stamped = s }(stamped)
	stamped = "v1.0.0"
	for b.Loop() {
		sink = Version()
	}
}

func BenchmarkCompletionCommands(b *testing.B) {
	app := &ucli.App{Name: "lockd"}
	for b.Loop() {
		sink = []*ucli.Command{versionCommand(app), completionCommand(app)}
	}
}

func BenchmarkPrepare(b *testing.B) {
	for b.Loop() {
		app := &ucli.App{Name: "lockd", Commands: []*ucli.Command{
			{Name: "serve", Flags: []ucli.Flag{&ucli.StringFlag{Name: "socket"}}},
			{Name: "run", Flags: []ucli.Flag{&ucli.StringFlag{Name: "socket"}, &ucli.BoolFlag{Name: "nonblock"}}},
		}}
		sink = Prepare(app)
	}
}
