package main

import (
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestSystemdNotify: under a service manager (NOTIFY_SOCKET), clocksync
// serve says READY=1, pings the watchdog at half of WATCHDOG_USEC once it
// has answered an NTP request of its own, and says STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	clitest.CheckNotify(t, 20*time.Second, 600*time.Millisecond, 4, nil, bin, "serve",
		"--bind", clitest.FreeAddr(t), "--stratum", "1")
}
