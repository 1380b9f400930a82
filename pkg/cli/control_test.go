package cli

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestListenControl(t *testing.T) {
	// A directory that does not exist is a usage error, not created.
	var ee *ExitError
	if _, err := ListenControl("x", filepath.Join(t.TempDir(), "sub", "x.sock")); !errors.As(err, &ee) || ee.Code != ExitUsage {
		t.Fatalf("socket in a missing directory: %v, want exit %d", err, ExitUsage)
	}
	path := filepath.Join(t.TempDir(), "x.sock")
	ln, err := ListenControl("x", path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	// A live daemon's socket is never taken over.
	if _, err := ListenControl("x", path); !errors.As(err, &ee) || ee.Code != ExitBusy {
		t.Fatalf("second listener on a live socket: %v, want exit %d", err, ExitBusy)
	}
	// A stale socket file (its daemon gone) is replaced.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket file should still exist for this test: %v", err)
	}
	ln2, err := ListenControl("x", path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln2.Close()
	if _, err := ListenControl("x", ""); !errors.As(err, &ee) || ee.Code != ExitUsage {
		t.Fatalf("empty path: %v, want exit %d", err, ExitUsage)
	}
}
