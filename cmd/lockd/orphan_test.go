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

// jobScripts start a background job, write its PID to $0 (atomically)
// and wait: a plain one, which SIGTERM ends, and one that ignores SIGTERM,
// which only the SIGKILL at the watchdog's deadline ends.
var jobScripts = []struct{ name, script string }{
	{"plain", `sleep 60 & echo $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`},
	{"ignores-term", `(trap "" TERM; exec sleep 60) & echo $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`},
}

// awaitGone waits for pid to be gone and fails unless it went within
// promise plus a margin of twice the measured cost of starting bin (the
// host's scheduling delay now; slack, measured before, and again after a
// late end, so that load that rose meanwhile does not fail a process that
// kept the promise). from is when the promise started to run.
func awaitGone(t *testing.T, pid int, from time.Time, promise, slack time.Duration, bin, what string) {
	t.Helper()
	limit := promise + 2*slack
	for !clitest.Gone(pid) {
		if time.Since(from) > limit+60*time.Second {
			t.Fatalf("%s: the background job %d still runs %v after the wrapper was killed or stopped", what, pid, time.Since(from).Round(time.Millisecond))
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(from)
	if took > limit {
		slack = max(slack, clitest.SpawnCost(bin))
		limit = promise + 2*slack
	}
	if took > limit {
		t.Fatalf("%s: the background job %d was gone only %v after the wrapper was killed or stopped (want within %v: %v promised plus twice the measured start cost %v)",
			what, pid, took.Round(time.Millisecond), limit, promise, slack)
	}
	t.Logf("%s: background job gone %v after the wrapper was killed or stopped (limit %v)", what, took.Round(time.Millisecond), limit)
}

// TestKilledRunLeavesNoJob: SIGKILL on `lockd run` (no handler runs)
// leaves nothing of its command: the command's watchdog reads the end of
// its input and ends the whole group, background jobs included, with
// SIGTERM at once and SIGKILL by its deadline (the lease's end plus the
// kill grace). Pdeathsig alone reached only the shell.
func TestKilledRunLeavesNoJob(t *testing.T) {
	c := startDaemons(t, 1)
	const grace = time.Second
	lease := mutex.DefaultConfig().Lease
	for _, tc := range jobScripts {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "job")
			cmd := exec.Command(lockdBin, "run", "--socket", c.sock(1), "--kill-grace", grace.String(), "L", "--", "sh", "-c", tc.script, pidFile)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			job := clitest.WaitPID(t, 20*time.Second, pidFile)
			t.Cleanup(func() { syscall.Kill(job, syscall.SIGKILL) })
			slack := clitest.SpawnCost(lockdBin)
			cmd.Process.Kill()
			killed := time.Now()
			cmd.Wait()
			promise := grace
			if tc.name == "ignores-term" {
				promise = lease + grace // the deadline: the lease's end plus the grace
			}
			awaitGone(t, job, killed, promise, slack, lockdBin, "lockd run "+tc.name)
		})
	}
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
	cmd := exec.Command(lockdBin, "run", "--socket", c.sock(1), "--kill-grace", grace.String(), "L", "--", "sh", "-c", jobScripts[1].script, pidFile)
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
	awaitGone(t, job, stopped, lease+grace, slack, lockdBin, "stopped lockd run")
	cmd.Process.Signal(syscall.SIGCONT)
	err := cmd.Wait()
	if exitCode(err) != 76 {
		t.Errorf("lockd run resumed after its watchdog fired: exit %d, want 76: %s", exitCode(err), stderr.String())
	}
}
