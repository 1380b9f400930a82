package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestSIGHUPReloadsAndReachesChild: SIGHUP makes elect run re-read
// --key-file and reaches the running command, which goes on; SIGTERM
// still stops both.
func TestSIGHUPReloadsAndReachesChild(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "cluster.key")
	clitest.WriteKeys(t, key, clitest.NewKey(t))
	ready, hups, logFile := filepath.Join(dir, "child.ready"), filepath.Join(dir, "hups"), filepath.Join(dir, "elect.log")
	stderr, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd := exec.Command(electBin, "run", "--id", "1", "--peers", "1="+freeAddr(t), "--key-file", key, "--no-color", "--", "sh", "-c",
		`trap 'echo hup >> "$1"' HUP; trap 'exit 42' TERM; touch "$0"; while :; do sleep 0.05; done`, ready, hups)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	clitest.WaitFor(t, 20*time.Second, func() bool { _, err := os.Stat(ready); return err == nil })
	clitest.WriteKeys(t, key, clitest.NewKey(t), clitest.NewKey(t))
	cmd.Process.Signal(syscall.SIGHUP)
	clitest.WaitFor(t, 20*time.Second, func() bool {
		b, _ := os.ReadFile(hups)
		l, _ := os.ReadFile(logFile)
		return strings.Count(string(b), "hup") == 1 && strings.Contains(string(l), "key file reloaded")
	})
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); exitCode(err) != 42 {
		l, _ := os.ReadFile(logFile)
		t.Fatalf("SIGTERM after SIGHUP: elect exited %d, want the child's 42\n%s", exitCode(err), l)
	}
}
