package main

import (
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestSystemdNotify: under a service manager (NOTIFY_SOCKET), mcast run
// --views says READY=1 once it is in a view (and says which), pings the
// watchdog at half of WATCHDOG_USEC from its driver's loop, and says
// STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	clitest.CheckNotify(t, 20*time.Second, 600*time.Millisecond, 4, func(ns *clitest.NotifySocket) {
		if !ns.Saw("READY=1\nSTATUS=member 1 serving on ") || !ns.Saw(", view ") {
			t.Errorf("READY=1 without the view it waited for")
		}
	}, mcastBin, "run", "--views", "--id", "1", "--peers", "1="+clitest.FreeAddr(t))
}
