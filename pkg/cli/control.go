package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/roundtable-go/roundtable/pkg/rawio"
)

// DefaultSocket is where a tool's daemon listens for local clients unless
// told otherwise: $XDG_RUNTIME_DIR/<tool>.sock, else in the temp directory.
func DefaultSocket(tool string) string {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	return filepath.Join(dir, tool+".sock")
}

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
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return nil, Exitf(ExitUsage, "--socket %s: no directory %s", path, filepath.Dir(path))
	}
	_ = os.Remove(path)
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

// Conn is one control connection: JSON lines both ways. Sends are safe
// for concurrent use; reads are not (one reader per connection).
type Conn struct {
	c   net.Conn
	rw  io.ReadWriter // c, or raw I/O on c's descriptor (see package rawio)
	sc  *bufio.Scanner
	mu  sync.Mutex
	enc *json.Encoder
}

// MaxControlLine bounds one line on a control socket (a status reply of a
// big cluster is the longest).
const MaxControlLine = 1 << 20

// NewConn frames c as JSON lines.
func NewConn(c net.Conn) *Conn {
	var rw io.ReadWriter = c
	if r := rawio.NewStream(c); r != nil {
		rw = r
	}
	sc := bufio.NewScanner(rw)
	sc.Buffer(make([]byte, 0, 4096), MaxControlLine)
	return &Conn{c: c, rw: rw, sc: sc, enc: json.NewEncoder(rw)}
}

// DialControl connects to tool's daemon on the Unix socket at path; exit
// 69, with a hint, when nobody serves it.
func DialControl(tool, path string) (*Conn, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, Exitf(ExitUnavailable, "no %s daemon at %s (start one with '%s serve', or give its --socket): %v", tool, path, tool, err)
	}
	return NewConn(c), nil
}

// Send writes v as one JSON line.
func (c *Conn) Send(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enc.Encode(v)
}

// Next reads one JSON line into v. A line that is not JSON is an error; the
// connection's end is io.EOF.
func (c *Conn) Next(v any) error {
	if !c.sc.Scan() {
		if err := c.sc.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	return json.Unmarshal(c.sc.Bytes(), v)
}

// SetDeadline bounds the connection's reads and writes.
func (c *Conn) SetDeadline(t time.Time) error { return c.c.SetDeadline(t) }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }
