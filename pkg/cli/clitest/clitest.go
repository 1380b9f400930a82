// Package clitest builds a command's binary once for its multi-process
// tests, so they run the real program.
package clitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main builds the command in the current directory as name into a
// temporary directory, stores its path in *bin, runs the tests and exits.
// Use it as the body of TestMain. With also (package paths relative to
// the current directory), those commands are built into the same
// directory, each named after its package's directory as go build names
// it, and *bin is the one of them called name: how a command made of a
// front binary and the program it hands over to is tested as installed.
func Main(m *testing.M, name string, bin *string, also ...string) {
	dir, err := os.MkdirTemp("", name+"-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, name)
	args := []string{"build", "-o", *bin, "."}
	if len(also) > 0 {
		args = append([]string{"build", "-o", dir + "/", "."}, also...)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building %s: %v\n%s", name, err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
