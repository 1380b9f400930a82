package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestChildExitCodes(t *testing.T) {
	c, err := StartChild([]string{"sh", "-c", "exit 3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if c.ExitCode() != 3 {
		t.Fatalf("exit code %d", c.ExitCode())
	}
	if _, err := StartChild([]string{"no-such-command-xyz"}, nil); Code(err) != ExitNotFound {
		t.Fatalf("missing command: %v (code %d)", err, Code(err))
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "noexec"), []byte("#!/bin/sh\n"), 0o644)
	if _, err := StartChild([]string{filepath.Join(dir, "noexec")}, nil); Code(err) != ExitCannotExec {
		t.Fatalf("non-executable: %v (code %d)", err, Code(err))
	}
}

func TestChildStopEscalates(t *testing.T) {
	// A child that ignores SIGTERM is killed after the grace period.
	ready := filepath.Join(t.TempDir(), "ready")
	c, err := StartChild([]string{"sh", "-c", "trap '' TERM; touch " + ready + "; while :; do sleep 0.05; done"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := os.Stat(ready); err != nil; _, err = os.Stat(ready) {
		time.Sleep(5 * time.Millisecond) // polling for the child's own signal, not a timing guess
	}
	start := time.Now()
	c.Stop(200 * time.Millisecond)
	if c.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit code %d, want %d", c.ExitCode(), 128+int(syscall.SIGKILL))
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Fatal("SIGKILL before the grace period")
	}
	// A cooperative child exits on SIGTERM with 128+15.
	c, _ = StartChild([]string{"sleep", "10"}, []string{"X=1"})
	c.Stop(5 * time.Second)
	if c.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit code %d", c.ExitCode())
	}
}

func ExampleCode() {
	err := Exitf(ExitBusy, "db is held by another process")
	fmt.Println(Code(err), err)
	fmt.Println(Code(nil), Code(fmt.Errorf("plain")))
	// Output:
	// 75 db is held by another process
	// 0 1
}

// TestLookPath: the search StartChild does, as exec.LookPath does it.
func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	bin, sub := filepath.Join(dir, "bin"), filepath.Join(dir, "bin", "tool") // a directory named like the command
	os.MkdirAll(sub, 0o755)
	other := filepath.Join(dir, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "tool"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "plain"), []byte("x"), 0o644)
	t.Setenv("PATH", bin+":"+other)
	if p, err := lookPath("tool"); err != nil || p != filepath.Join(other, "tool") {
		t.Fatalf("tool: %q %v (a directory of that name must be passed over)", p, err)
	}
	if _, err := lookPath("plain"); !errors.Is(err, errNotFound) {
		t.Fatalf("a file without execute bits: %v", err)
	}
	if _, err := lookPath("nothing-here"); !errors.Is(err, errNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if p, err := lookPath(filepath.Join(other, "tool")); err != nil || p != filepath.Join(other, "tool") {
		t.Fatalf("a path is taken as it is: %q %v", p, err)
	}
	if _, err := lookPath(filepath.Join(bin, "plain")); err == nil {
		t.Fatal("a path without execute bits accepted")
	}
	// Relative entries are refused, not followed (exec.ErrDot).
	t.Chdir(other)
	t.Setenv("PATH", bin+"::/nonexistent")
	if _, err := lookPath("tool"); err == nil || errors.Is(err, errNotFound) {
		t.Fatalf("found through an empty PATH entry: %v", err)
	}
	if _, err := StartChild([]string{"tool"}, nil); Code(err) != ExitCannotExec {
		t.Fatalf("StartChild through a relative entry: %v", err)
	}
	t.Setenv("PATH", "")
	if _, err := lookPath("sh"); !errors.Is(err, errNotFound) {
		t.Fatalf("empty PATH: %v", err)
	}
}

// TestSibling: Handover's search. Beside the running executable first
// (here the test binary, in a directory of go test's own), then $PATH; a
// name found nowhere is exit code 69 with both places named.
func TestSibling(t *testing.T) {
	self, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Skip("no /proc/self/exe:", err)
	}
	dir := t.TempDir()
	tool := filepath.Join(dir, "rt-sibling-test")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if p, err := sibling("rt-sibling-test"); err != nil || p != tool {
		t.Fatalf("from $PATH: %q %v", p, err)
	}
	beside := filepath.Join(filepath.Dir(self), "rt-sibling-test")
	if err := os.WriteFile(beside, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Skip("the test binary's directory is not writable:", err)
	}
	defer os.Remove(beside)
	if p, err := sibling("rt-sibling-test"); err != nil || p != beside {
		t.Fatalf("beside the executable, before $PATH: %q %v", p, err)
	}
	os.Remove(beside)
	t.Setenv("PATH", "/nonexistent")
	_, err = sibling("rt-sibling-test")
	if Code(err) != ExitUnavailable || !strings.Contains(err.Error(), filepath.Dir(self)+"/ or in $PATH") {
		t.Fatalf("found nowhere: %v (code %d)", err, Code(err))
	}
}
