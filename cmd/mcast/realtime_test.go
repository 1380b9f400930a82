package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestRealtime: with --realtime, `mcast run` (a fixed group and a dynamic
// one) and `mcast bench` put themselves under SCHED_RR|SCHED_RESET_ON_FORK
// at priority 1 (pkg/cli sched.go), as `chrt -p` shows once the member is
// up (--ready-file); without it, the default, they stay SCHED_OTHER.
// Without the privilege mcast says so on stderr and runs normally: the
// test checks that line and skips the rest.
func TestRealtime(t *testing.T) {
	cases := map[string][]string{
		"run":               {"run"},
		"run --order total": {"run", "--order", "total"},
		"bench":             {"bench", "--count", "1000000", "--rate", "10"},
	}
	for name, args := range cases {
		for _, on := range []bool{true, false} {
			dir := t.TempDir()
			ready := filepath.Join(dir, "ready")
			a := append(append([]string{}, args...), "--id", "1", "--peers", "1="+clitest.FreeAddr(t), "--ready-file", ready)
			if on {
				a = append(a, "--realtime")
			}
			cmd := exec.Command(mcastBin, a...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			in, err := cmd.StdinPipe() // held open: the member stays up
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) // also when the test skips or fails below
			clitest.WaitFor(t, 20*time.Second, func() bool { _, err := os.Stat(ready); return err == nil })
			policy := clitest.SchedPolicy(t, cmd.Process.Pid)
			cmd.Process.Kill()
			in.Close()
			cmd.Wait()
			t.Logf("%s %v: %s", name, on, policy)
			switch {
			case on && strings.Contains(stderr.String(), "realtime scheduling is off"):
				t.Skipf("realtime scheduling not permitted here; mcast said so: %s", stderr.String())
			case on && (!strings.Contains(policy, "SCHED_RR|SCHED_RESET_ON_FORK") || !strings.Contains(policy, "priority: 1")):
				t.Errorf("mcast %s --realtime: %s", name, policy)
			case !on && !strings.Contains(policy, "SCHED_OTHER"):
				t.Errorf("mcast %s (no --realtime): %s", name, policy)
			}
		}
	}
}
