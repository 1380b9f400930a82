package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestToolDependencies keeps each tool one binary without bloat: no tool
// links an HTTP stack or a metrics library (--metrics is served by
// pkg/metrics without either: docs/metrics.md, "Cost"), the simulator, its
// test flags (pkg/sim/simtest) or a test-only module, and each links only
// the protocol packages it runs. No service package links the simulator:
// a `sim` subcommand has its own package.
func TestToolDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	forbidden := []string{"net/http", "github.com/prometheus/", "github.com/VictoriaMetrics/", "github.com/roundtable-go/roundtable/pkg/sim",
		"github.com/roundtable-go/roundtable/pkg/sim/simtest",
		"github.com/anishathalye/porcupine", "github.com/beevik/ntp", "gonum.org/", "github.com/miekg/dns"}
	protocols := map[string][]string{ // what each tool may link of the protocol packages
		"elect":     {"election", "electd"},
		"lockd":     {"mutex", "election", "lockd"},
		"clocksync": {"clocksync", "election", "clockd"},
		"consensus": {"consensus", "consensusd"},
		"mcast":     {"mcast", "gossip", "mcastd"},
		"ticketd":   {"ticket", "ticketd", "ticketsim", "gossip"},
	}
	all := []string{"election", "mutex", "lockd", "clocksync", "clockd", "consensus", "ticket", "ticketd", "ticketsim", "mcast", "gossip", "mcastd", "electd", "consensusd"}
	// `ticketd sim` runs the simulator. Its plots (gonum) are only in a
	// ticketd built with -tags plot: gonum/plot parses a dozen fonts at
	// start-up, about 0.6 ms that every `ticketd run` would pay twice.
	allowed := map[string][]string{"ticketd": {"github.com/roundtable-go/roundtable/pkg/sim"}}
	for tool, own := range protocols {
		out, err := exec.Command("go", "list", "-deps", "../../cmd/"+tool).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", tool, err)
		}
		deps := strings.Fields(string(out))
		for _, d := range deps {
			for _, f := range forbidden {
				if slices.Contains(allowed[tool], f) {
					continue
				}
				if d == f || strings.HasPrefix(d, f) && strings.HasSuffix(f, "/") {
					t.Errorf("%s links %s", tool, d)
				}
			}
			for _, p := range all {
				if d == "github.com/roundtable-go/roundtable/pkg/"+p && !slices.Contains(own, p) {
					t.Errorf("%s links pkg/%s, another tool's protocol", tool, p)
				}
			}
		}
	}
	for _, svc := range []string{"lockd", "clockd", "ticketd", "mcastd", "electd", "consensusd"} {
		out, err := exec.Command("go", "list", "-deps", "../"+svc).Output()
		if err != nil {
			t.Fatalf("go list pkg/%s: %v", svc, err)
		}
		if slices.Contains(strings.Fields(string(out)), "github.com/roundtable-go/roundtable/pkg/sim") {
			t.Errorf("the service pkg/%s links pkg/sim", svc)
		}
	}
}

// heavyInit lists the packages linked into lockd and ticketd whose
// initialisation allocates more than initLimit bytes, each with a ceiling:
// every start of a client (`lockd run`, `ticketd run`) runs every linked
// package's initialisation before main. A package that builds a table,
// compiles a regular expression or reads files at initialisation shows up
// here before it shows up in a timing. scripts/bench-start.sh measures the
// time each costs (docs/performance.md, "What the operations features cost
// a `lockd run` start").
var heavyInit = map[string]int{
	// urfave/cli's man-page and markdown generator (its docs.go): about
	// 0.6 ms a start; -tags urfave_cli_no_docs leaves it out.
	"github.com/russross/blackfriday/v2":          256 << 10,
	"github.com/hashicorp/go-sockaddr":            32 << 10, // --bind templates
	"github.com/roundtable-go/roundtable/pkg/cli": 16 << 10,
	"unicode": 16 << 10, // the standard library's tables
}

const initLimit = 8 << 10

// initTooHeavy reads the lines GODEBUG=inittrace=1 writes ("init PKG @T ms,
// C ms clock, B bytes, A allocs") and says which packages allocate more
// than heavyInit or initLimit allows. The bytes, unlike the times, do not
// depend on the machine's load.
func initTooHeavy(trace string) (complaints []string, packages int) {
	for _, line := range strings.Split(trace, "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		packages++
		b, err := strconv.Atoi(f[7])
		if err != nil {
			complaints = append(complaints, "unreadable: "+line)
			continue
		}
		limit, listed := heavyInit[f[1]]
		if !listed {
			limit = initLimit
		}
		if b > limit {
			complaints = append(complaints, fmt.Sprintf("%s allocates %d bytes at initialisation (limit %d)", f[1], b, limit))
		}
	}
	return complaints, packages
}

// TestInitTooHeavyCatches plants the initialisation of a metrics library
// (a table of runtime/metrics descriptions) and a listed package grown
// past its ceiling in a trace.
func TestInitTooHeavyCatches(t *testing.T) {
	trace := `init runtime @0.008 ms, 0.088 ms clock, 0 bytes, 0 allocs
init github.com/VictoriaMetrics/metrics @1.2 ms, 0.41 ms clock, 91840 bytes, 1022 allocs
init unicode @0.5 ms, 0.047 ms clock, 11400 bytes, 16 allocs
init github.com/hashicorp/go-sockaddr @0.9 ms, 0.3 ms clock, 65536 bytes, 400 allocs
`
	got, n := initTooHeavy(trace)
	if n != 4 || len(got) != 2 || !strings.Contains(got[0], "VictoriaMetrics") || !strings.Contains(got[1], "go-sockaddr") {
		t.Errorf("initTooHeavy read %d packages and said %q; want the metrics library and go-sockaddr", n, got)
	}
}

// TestClientStart keeps the clients' start small: no package linked into
// lockd or ticketd allocates much at initialisation (initTooHeavy), and
// `lockd run` and `ticketd run` take none of the flags that would make a
// client read a key file, build a log handler, serve metrics or resolve
// names (the operations features cost a client start nothing but their
// packages' initialisation: docs/performance.md).
func TestClientStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockd and ticketd")
	}
	dir := t.TempDir()
	for _, tool := range []string{"lockd", "ticketd"} {
		bin := filepath.Join(dir, tool)
		if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/"+tool).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", tool, err, out)
		}
		cmd := exec.Command(bin, "--version")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", tool, err, out)
		}
		complaints, n := initTooHeavy(string(out))
		if n < 50 {
			t.Fatalf("%s: GODEBUG=inittrace=1 traced %d packages; the trace's format changed?\n%s", tool, n, out)
		}
		for _, c := range complaints {
			t.Errorf("%s: %s", tool, c)
		}
		help, err := exec.Command(bin, "run", "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s run --help: %v\n%s", tool, err, help)
		}
		for _, flag := range []string{"--" + FlagKeyFile, "--" + FlagLogFormat, "--" + FlagMetrics, "--" + FlagPeers} {
			if strings.Contains(string(help), flag+" ") {
				t.Errorf("%s run takes %s: the client path would pay for it", tool, flag)
			}
		}
	}
}
