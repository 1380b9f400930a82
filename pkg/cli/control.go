package cli

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/roundtable-go/roundtable/pkg/proc"
)

// DefaultSocket is where a tool's daemon listens for local clients unless
// told otherwise (see proc.DefaultSocket).
func DefaultSocket(tool string) string { return proc.DefaultSocket(tool) }

// ListenControl opens a daemon's Unix control socket with mode 0600 (only
// the owner may talk to it), replacing a stale socket file but never a live
// daemon's: that is exit 75, like any other busy resource.
func ListenControl(tool, path string) (net.Listener, error) {
	if path == "" {
		return nil, Exitf(ExitUsage, "--socket must not be empty")
	}
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, Exitf(ExitBusy, "another %s is serving %s", tool, path)
	}
	_ = os.Remove(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, Exitf(ExitUsage, "--socket: %v", err)
	}
	// The umask makes the socket private from the moment it exists; the
	// chmod is for file systems that ignore it.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, Exitf(ExitUsage, "--socket: %v", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, Exitf(ExitUsage, "--socket: %v", err)
	}
	return ln, nil
}
