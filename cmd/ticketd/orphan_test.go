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
	for _, tc := range clitest.JobScripts {
		t.Run(tc.Name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "job")
			cmd := exec.Command(ticketdBin, "run", "--socket", c.sock(1), "--", "sh", "-c", tc.Script, pidFile)
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
			if tc.Name == "ignores-term" {
				promise = lease + grace
			}
			clitest.AwaitGone(t, job, killed, promise, slack, ticketdBin, "ticketd run "+tc.Name)
		})
	}
}
