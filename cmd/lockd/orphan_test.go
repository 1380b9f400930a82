package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
	"github.com/roundtable-go/roundtable/pkg/mutex"
)

// TestKilledRunLeavesNoJob: SIGKILL on `lockd run` (no handler runs)
// leaves nothing of its command: the command's watchdog reads the end of
// its input and ends the whole group, background jobs included, with
// SIGTERM at once and SIGKILL by its deadline (the lease's end plus the
// kill grace). Pdeathsig alone reached only the shell.
func TestKilledRunLeavesNoJob(t *testing.T) {
	c := startDaemons(t, 1)
	const grace = time.Second
	lease := mutex.DefaultConfig().Lease
	clitest.KilledWrapperLeavesNoJob(t, lockdBin, []string{"run", "--socket", c.sock(1), "--kill-grace", grace.String(), "L"}, func(name string) time.Duration {
		if name == "ignores-term" {
			return lease + grace // the deadline: the lease's end plus the grace
		}
		return grace
	})
}

// TestStoppedRunCommandKilledAtDeadline: a `lockd run` stopped with
// SIGSTOP renews nothing, so the lease it knows ends within a lease; its
// watchdog kills the command's whole group at that end plus the kill
// grace, though the wrapper cannot act. Resumed, the wrapper says the lock
// was lost (76). Without a watchdog the command ran on for as long as the
// wrapper stayed stopped.
func TestStoppedRunCommandKilledAtDeadline(t *testing.T) {
	c := startDaemons(t, 1)
	const grace = 500 * time.Millisecond
	lease := mutex.DefaultConfig().Lease
	pidFile := filepath.Join(t.TempDir(), "job")
	cmd := exec.Command(lockdBin, "run", "--socket", c.sock(1), "--kill-grace", grace.String(), "L", "--", "sh", "-c", clitest.JobScripts[1].Script, pidFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Process.Signal(syscall.SIGCONT) })
	job := clitest.WaitPID(t, 20*time.Second, pidFile)
	t.Cleanup(func() { syscall.Kill(job, syscall.SIGKILL) })
	slack := clitest.SpawnCost(lockdBin)
	cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	clitest.AwaitGone(t, job, stopped, lease+grace, slack, lockdBin, "stopped lockd run")
	cmd.Process.Signal(syscall.SIGCONT)
	err := cmd.Wait()
	if exitCode(err) != 76 {
		t.Errorf("lockd run resumed after its watchdog fired: exit %d, want 76: %s", exitCode(err), stderr.String())
	}
}
