package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// TestClusterScriptRefusesLiveDir: start on a directory whose members
// still run exits 75 with a message and leaves that cluster as it was
// (stop then stops it); once stopped, the directory can be used again.
func TestClusterScriptRefusesLiveDir(t *testing.T) {
	script := Script(t, "cluster.sh")
	dir := t.TempDir()
	// A member that only writes its ready file and waits.
	member := filepath.Join(dir, "member")
	os.WriteFile(member, []byte("#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --ready-file ] && echo ok > \"$2\"; shift; done\nexec sleep 600\n"), 0o755)
	cluster := filepath.Join(dir, "c")
	run := func(args ...string) (int, string) {
		out, err := exec.Command(script, args...).CombinedOutput()
		return exitCode(err), string(out)
	}
	if code, out := run("start", "-n", "2", "-d", cluster, member); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	t.Cleanup(func() { run("stop", "-d", cluster) })
	peers, _ := os.ReadFile(filepath.Join(cluster, "peers"))
	pid1, _ := os.ReadFile(filepath.Join(cluster, "1.pid"))
	code, out := run("start", "-n", "2", "-d", cluster, member)
	if code != 75 || !strings.Contains(out, "live members") || !strings.Contains(out, "stop -d "+cluster) {
		t.Fatalf("start over a live cluster: exit %d, want 75 and a message naming stop:\n%s", code, out)
	}
	if p, _ := os.ReadFile(filepath.Join(cluster, "peers")); string(p) != string(peers) {
		t.Fatalf("the refused start rewrote the peers file: %q, was %q", p, peers)
	}
	if code, out := run("stop", "-d", cluster); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, out)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pid1)))
	if !Gone(pid) {
		t.Fatalf("member 1 (pid %d) still runs after stop", pid)
	}
	if code, out := run("start", "-n", "2", "-d", cluster, member); code != 0 {
		t.Fatalf("start on a stopped cluster's directory: exit %d\n%s", code, out)
	}
}
