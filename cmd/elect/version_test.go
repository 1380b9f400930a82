package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionNamesRevision: elect built in a git clone prints the commit it
// was built from, and "(modified)" once the tree has changes, as `go
// build` records them (vcs.revision, vcs.modified).
func TestVersionNamesRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("clones the repository and builds elect twice")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "--quiet", "--shared", root, clone).CombinedOutput(); err != nil {
		t.Skipf("cannot clone %s: %v\n%s", root, err, out)
	}
	rev, err := exec.Command("git", "-C", clone, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := func() string {
		t.Helper()
		bin := filepath.Join(clone, "elect.bin")
		build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/elect")
		build.Dir = clone
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatalf("elect --version: %v", err)
		}
		os.Remove(bin)
		return strings.TrimSpace(string(out))
	}
	// Go 1.24 and later write the revision into a pseudo-version
	// (v0.0.0-<time>-<revision>); earlier ones leave "(devel)", and the
	// revision follows it.
	short := string(rev[:12])
	if got := version(); !strings.HasPrefix(got, "elect version ") || !strings.Contains(got, short) || strings.Contains(got, "modified") {
		t.Fatalf("built from a clean clone at %s: %q", short, got)
	}
	if err := os.WriteFile(filepath.Join(clone, "cmd", "elect", "extra.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := version(); !strings.Contains(got, short) || !strings.HasSuffix(got, " (modified)") {
		t.Fatalf("built from a changed tree at %s: %q, want the revision and (modified)", short, got)
	}
}
