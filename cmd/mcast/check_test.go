package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCommand: `mcast check` on logs with a causal slip (pkg/mcastd's
// testdata) exits 1 and prints the smallest counterexample as file:line
// references; the same logs pass as FIFO.
func TestCheckCommand(t *testing.T) {
	logs := filepath.Join("..", "..", "pkg", "mcastd", "testdata", "causal-slip")
	a, b, c := filepath.Join(logs, "1.log"), filepath.Join(logs, "2.log"), filepath.Join(logs, "3.log")
	cmd := exec.Command(mcastBin, "check", "--order", "causal", a, b, c)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("check --order causal: %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{"causal: member 3 delivered 2/1 before 1/1",
		b + ":1: deliver 1/1", b + ":2: send 1", c + ":1: deliver 2/1", c + ":2: deliver 1/1 (later)"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("check output lacks %q:\n%s", want, out)
		}
	}
	if out, err := exec.Command(mcastBin, "check", "--order", "fifo", a, b, c).CombinedOutput(); err != nil {
		t.Fatalf("check --order fifo: %v\n%s", err, out)
	}
}
