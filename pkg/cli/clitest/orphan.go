package clitest

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// JobScripts are `sh -c` scripts for a wrapper's command that start a
// background job, write its PID to $0 (atomically) and wait: a plain
// one, which SIGTERM ends, and one that ignores SIGTERM, which only the
// SIGKILL at the watchdog's deadline ends.
var JobScripts = []struct{ Name, Script string }{
	{"plain", `sleep 60 & echo $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`},
	{"ignores-term", `(trap "" TERM; exec sleep 60) & echo $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`},
}

// AwaitGone waits for pid to be gone and fails unless it went within
// promise plus a margin of twice the measured cost of starting bin (the
// host's scheduling delay: slack, measured before, and again after a late
// end, so that load that rose meanwhile does not fail a process that kept
// the promise). from is when the promise started to run.
func AwaitGone(t testing.TB, pid int, from time.Time, promise, slack time.Duration, bin, what string) {
	t.Helper()
	limit := promise + 2*slack
	for !Gone(pid) {
		if time.Since(from) > limit+60*time.Second {
			t.Fatalf("%s: the background job %d still runs %v after the wrapper was killed or stopped", what, pid, time.Since(from).Round(time.Millisecond))
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(from)
	if took > limit {
		slack = max(slack, SpawnCost(bin))
		limit = promise + 2*slack
	}
	if took > limit {
		t.Fatalf("%s: the background job %d was gone only %v after the wrapper was killed or stopped (want within %v: %v promised plus twice the measured start cost %v)",
			what, pid, took.Round(time.Millisecond), limit, promise, slack)
	}
	t.Logf("%s: background job gone %v after the wrapper was killed or stopped (limit %v)", what, took.Round(time.Millisecond), limit)
}

// KilledWrapperLeavesNoJob runs bin with args, then "--", "sh", "-c" and
// each of JobScripts (a subtest each), waits for the job's PID, SIGKILLs
// the wrapper and fails unless the job is gone within promise(script
// name) plus twice the measured start cost of bin (AwaitGone).
func KilledWrapperLeavesNoJob(t *testing.T, bin string, args []string, promise func(name string) time.Duration) {
	for _, tc := range JobScripts {
		t.Run(tc.Name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "job")
			cmd := exec.Command(bin, append(slices.Clone(args), "--", "sh", "-c", tc.Script, pidFile)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			job := WaitPID(t, 20*time.Second, pidFile)
			t.Cleanup(func() { _ = syscall.Kill(job, syscall.SIGKILL) })
			slack := SpawnCost(bin)
			_ = cmd.Process.Kill()
			killed := time.Now()
			_ = cmd.Wait()
			AwaitGone(t, job, killed, promise(tc.Name), slack, bin, filepath.Base(bin)+" "+args[0]+" "+tc.Name)
		})
	}
}
