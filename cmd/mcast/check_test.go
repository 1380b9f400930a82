package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCommand: `mcast check` on logs with a causal slip exits 1 and
// prints the smallest counterexample as file:line references; the same
// logs pass as FIFO.
func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	a := write("1.log",
		`{"event":"send","member":1,"seq":1,"payload":"question"}`,
		`{"event":"deliver","member":1,"sender":2,"seq":1,"payload":"answer"}`,
		`{"event":"exit","member":1}`)
	b := write("2.log",
		`{"event":"deliver","member":2,"sender":1,"seq":1,"payload":"question"}`,
		`{"event":"send","member":2,"seq":1,"payload":"answer"}`,
		`{"event":"exit","member":2}`)
	c := write("3.log",
		`{"event":"deliver","member":3,"sender":2,"seq":1,"payload":"answer"}`,
		`{"event":"deliver","member":3,"sender":1,"seq":1,"payload":"question"}`,
		`{"event":"exit","member":3}`)
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
