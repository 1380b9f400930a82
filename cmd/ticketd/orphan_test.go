package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// orphanJobs start a background job, write its PID to $0 (atomically)
// and wait: a plain one, which SIGTERM ends, and one that ignores SIGTERM,
// which only the SIGKILL at the watchdog's deadline ends.
var orphanJobs = []struct{ name, script string }{
	{"plain", `sleep 60 & echo $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`},
	{"ignores-term", `(trap "" TERM; exec sleep 60) & echo $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`},
}

// TestKilledRunLeavesNoJob: SIGKILL on `ticketd run` (no handler runs)
// leaves nothing of its command: the watchdog, which no longer dies with
// its supervisor, reads the end of its input and ends the whole group,
// background jobs included, with SIGTERM at once and SIGKILL by its
// deadline (the ticket's lease end plus the kill grace), the bound the
// members keep before they hand the ticket out again. Pdeathsig alone
// reached only the shell, and took the watchdog with the wrapper.
func TestKilledRunLeavesNoJob(t *testing.T) {
	c := startPool(t, 1, 1)
	c.waitCore(1)
	const (
		grace = 300 * time.Millisecond // startPool's --max-kill-grace
		lease = time.Second            // a grant is good for a second at most (pkg/ticketd, machine.until)
	)
	for _, tc := range orphanJobs {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "job")
			cmd := exec.Command(ticketdBin, "run", "--socket", c.sock(1), "--", "sh", "-c", tc.script, pidFile)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			job := clitest.WaitPID(t, 20*time.Second, pidFile)
			t.Cleanup(func() { syscall.Kill(job, syscall.SIGKILL) })
			// The margin is twice what starting a process costs now (the
			// host's scheduling delay), measured before the kill and again
			// after a late end.
			slack := clitest.SpawnCost(ticketdBin)
			cmd.Process.Kill()
			killed := time.Now()
			cmd.Wait()
			promise := grace
			if tc.name == "ignores-term" {
				promise = lease + grace
			}
			limit := promise + 2*slack
			for !clitest.Gone(job) {
				if time.Since(killed) > limit+60*time.Second {
					t.Fatalf("the background job %d still runs %v after ticketd run was killed", job, time.Since(killed).Round(time.Millisecond))
				}
				time.Sleep(5 * time.Millisecond)
			}
			took := time.Since(killed)
			if took > limit {
				slack = max(slack, clitest.SpawnCost(ticketdBin))
				limit = promise + 2*slack
			}
			if took > limit {
				t.Fatalf("the background job %d was gone only %v after ticketd run was killed (want within %v: %v plus twice the measured start cost %v)",
					job, took.Round(time.Millisecond), limit, promise, slack)
			}
			t.Logf("background job gone %v after the kill (limit %v)", took.Round(time.Millisecond), limit)
		})
	}
}
