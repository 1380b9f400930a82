package main

import (
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestSystemdNotify: under a service manager (NOTIFY_SOCKET), elect run
// says READY=1 once it knows a leader (the READY datagram's STATUS names
// it), puts the leader in STATUS=, pings the watchdog at half of
// WATCHDOG_USEC from its driver's loop, and says STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	clitest.CheckNotify(t, waitLimit, 600*time.Millisecond, 4, func(ns *clitest.NotifySocket) {
		if !ns.Saw(", leader 1 term ") {
			t.Error("READY=1 came before the member knew a leader (its STATUS= names none)")
		}
	}, electBin, "run", "--id", "1", "--peers", "1="+clitest.FreeAddr(t))
}
