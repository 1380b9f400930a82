package clitest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestClusterScriptHelp: scripts/cluster.sh --help is usage on stdout and
// exit 0; a misuse is usage on stderr and exit 64; an error message ends
// with its text, not with its exit code.
func TestClusterScriptHelp(t *testing.T) {
	script := Script(t, "cluster.sh")
	out, err := exec.Command(script, "--help").Output()
	if err != nil || !strings.Contains(string(out), "cluster.sh start") {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	cmd := exec.Command(script)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); exitCode(err) != 64 || len(out) > 0 || !strings.Contains(stderr.String(), "cluster.sh start") {
		t.Fatalf("no arguments: exit %d, stdout %q, stderr %q", exitCode(err), out, stderr.String())
	}
	out, err = exec.Command(script, "start", "-d", t.TempDir(), "no-such-tool-xyz", "run").CombinedOutput()
	msg := strings.TrimSpace(string(out))
	if exitCode(err) != 127 || strings.HasSuffix(msg, "127") || !strings.Contains(msg, "PATH") {
		t.Fatalf("a tool not found: exit %d, %q; want 127, a hint about PATH, no stray code", exitCode(err), msg)
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
