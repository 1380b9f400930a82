package scenariotest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatch: a bug is caught only when the output changes and shows the
// line named; a bug that changes nothing, or changes another line, fails.
func TestCatch(t *testing.T) {
	play := func(out string) func(string, int) (string, string, error) {
		return func(path string, _ int) (string, string, error) {
			if filepath.Dir(path) != "testdata" {
				return "", "", os.ErrNotExist
			}
			return out, "a\nb\n", nil
		}
	}
	b := Bug[int]{Name: "bugX", File: "x.txt", Shows: "failed: two holders"}
	if err := catch(b, play("a\nfailed: two holders\n")); err != nil {
		t.Fatalf("a bug that shows its line: %v", err)
	}
	if err := catch(b, play("a\nb\n")); err == nil || !strings.Contains(err.Error(), "does not catch bugX") {
		t.Fatalf("a bug that changes nothing passed: %v", err)
	}
	if err := catch(b, play("a\nc\n")); err == nil || !strings.Contains(err.Error(), "+ c") {
		t.Fatalf("a bug that changes another line passed, or no diff: %v", err)
	}
}

// TestGolden: a differing file fails with a diff; -rewrite writes the
// output, after which it passes.
func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.txt")
	if err := os.WriteFile(path, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := golden(path, "one\ntwo\n", false); err != nil {
		t.Fatal(err)
	}
	if err := golden(path, "one\nthree\n", false); err == nil || !strings.Contains(err.Error(), "+ three") {
		t.Fatalf("a changed output passed, or no diff: %v", err)
	}
	if err := golden(path, "one\nthree\n", true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one\nthree\n" {
		t.Fatalf("-rewrite wrote %q", b)
	}
}
