package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
	"github.com/roundtable-go/roundtable/pkg/ticketsim"
)

func simRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(ticketdBin, append([]string{"sim"}, args...)...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, o.String(), e.String()
}

// TestSimCommand: `ticketd sim` as docs/ticketd.md shows it: a text report, one
// JSON object with --json that the same seed reproduces, exit 64 for a
// configuration it refuses, and a plot in the format the file names.
func TestSimCommand(t *testing.T) {
	args := []string{"--processes", "80", "--tickets", "20", "--pf", "0.003", "--rounds", "100", "--seed", "3"}
	code, out, stderr := simRun(t, args...)
	if code != 0 || !strings.Contains(out, "availability") || !strings.Contains(out, "Theorem 4.1 held at every round") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	var a, b map[string]any
	for _, v := range []*map[string]any{&a, &b} {
		code, out, stderr = simRun(t, append(args, "--json")...)
		if code != 0 || strings.Count(out, "\n") != 1 {
			t.Fatalf("--json: exit %d, want one line\n%s%s", code, out, stderr)
		}
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatal(err)
		}
		clitest.CheckJSON(t, "ticketd sim", []byte(out))
		delete(*v, "elapsed_ns")
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) || a["crashes"] == nil {
		t.Fatalf("seed 3 twice:\n%s\n%s", ja, jb)
	}
	for _, bad := range [][]string{{"--alpha", "1"}, {"--pf", "-0.1"}, {"--processes", "10", "--tickets", "20"}, {"--plot", "x.txt"}, {"--k", "0"}, {"--margin", "-1s"}, {"--suspect", "0"}, {"--sweep", "--pfs", "x"}, {"extra"}} {
		if code, _, stderr := simRun(t, bad...); code != 64 || stderr == "" {
			t.Errorf("sim %v: exit %d, want 64 with a message\n%s", bad, code, stderr)
		}
	}
	code, out, stderr = simRun(t, "--processes", "40", "--tickets", "10", "--rounds", "40", "--seeds", "1", "--sweep", "--json")
	if code != 0 || strings.Count(out, "\n") != 24 {
		t.Fatalf("--sweep --json: exit %d, want 24 lines\n%s%s", code, out, stderr)
	}
	clitest.CheckJSON(t, "ticketd sim", []byte(out))
	file := filepath.Join(t.TempDir(), "a.svg")
	code, out, stderr = simRun(t, "--processes", "40", "--tickets", "10", "--rounds", "40", "--seeds", "1", "--plot", file)
	if !ticketsim.CanPlot {
		// The default build: a clear refusal before any work.
		if code != 69 || out != "" || !strings.Contains(stderr, "-tags plot") {
			t.Fatalf("--plot without plots: exit %d, want 69 and how to build with them\n%s%s", code, out, stderr)
		}
		return
	}
	if code != 0 || strings.Count(out, "\n") != 24 || !strings.Contains(out, "alpha 0.9 pf 0.3 (above the bound 0.05)") {
		t.Fatalf("--plot: exit %d, want 24 lines\n%s%s", code, out, stderr)
	}
	svg, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), "α = 0.8") {
		t.Fatalf("--plot wrote no SVG with a legend (%v)", err)
	}
}
