package main

import (
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
	// The margin is twice what starting a process costs now (the host's
	// scheduling delay), measured before the kill and again after a late
	// end.
	clitest.KilledWrapperLeavesNoJob(t, ticketdBin, []string{"run", "--socket", c.sock(1)}, func(name string) time.Duration {
		if name == "ignores-term" {
			return lease + grace
		}
		return grace
	})
}
