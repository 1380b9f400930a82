package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestSystemdNotify: under a service manager (NOTIFY_SOCKET), ticketd
// serve says READY=1 once it is in a pool, pings the watchdog at half of
// WATCHDOG_USEC from its driver's loop, and says STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", dir)
	clitest.CheckNotify(t, 20*time.Second, 600*time.Millisecond, 4, nil, ticketdBin, "serve", "--id", "1",
		"--bind", clitest.FreeAddr(t), "--tickets", "3", "--socket", filepath.Join(dir, "1.sock"))
}
