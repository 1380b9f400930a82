package cli

import (
	"os/exec"
	"slices"
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
