package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
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
// told otherwise: $XDG_RUNTIME_DIR/<tool>.sock (a directory private to the
// user by its specification), else <tool>.sock in PrivateDir, never in a
// directory others can write to, where another user could take the name
// first.
func DefaultSocket(tool string) string {
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		return filepath.Join(dir, tool+".sock")
	}
	return filepath.Join(PrivateDir(), tool+".sock")
}

// PrivateDir is this user's directory for control sockets when there is no
// XDG_RUNTIME_DIR: roundtable-<uid> in the temporary directory, mode 0700,
// as tmux and ssh-agent keep theirs. ListenControl creates it.
func PrivateDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("roundtable-%d", os.Geteuid()))
}

// ensurePrivateDir creates PrivateDir, or checks that the one there is this
// user's own and closed to others: in a shared temporary directory another
// user could have made it first.
func ensurePrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return fmt.Errorf("%s is not a directory", dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d): another user made it first", dir, st.Uid, os.Geteuid())
	case st.Mode&0o077 != 0:
		return fmt.Errorf("%s is open to other users (mode %o): it must be 0700", dir, st.Mode&0o777)
	}
	return nil
}

// ListenControl opens a daemon's Unix control socket with mode 0600 (only
// the owner may talk to it), replacing a stale socket but never a live
// daemon's (exit 75, like any other busy resource) and never anything that
// is not a socket (a file or a directory at path is a usage error, 64).
// The socket's directory must exist, except PrivateDir, which is created.
func ListenControl(tool, path string) (net.Listener, error) {
	if path == "" {
		return nil, Exitf(ExitUsage, "--socket must not be empty")
	}
	dir := filepath.Dir(path)
	if dir == PrivateDir() {
		if err := ensurePrivateDir(dir); err != nil {
			return nil, Exitf(ExitNoPerm, "--socket: %v", err)
		}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, Exitf(ExitUsage, "--socket %s: no directory %s", path, dir)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, Exitf(ExitUsage, "--socket %s: there is a %s there, not a socket; it is left alone", path, kind(fi))
		}
		if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
			c.Close()
			return nil, Exitf(ExitBusy, "another %s is serving %s", tool, path)
		}
		if err := os.Remove(path); err != nil { // a stale socket: its daemon is gone
			return nil, Exitf(ExitUsage, "--socket: %v", err)
		}
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

func kind(fi os.FileInfo) string {
	if fi.IsDir() {
		return "directory"
	}
	return "file"
}

// Conn is one control connection: JSON lines both ways. Sends are safe
// for concurrent use; reads are not (one reader per connection).
type Conn struct {
	c   net.Conn
	rw  io.ReadWriter // c, or raw I/O on c's descriptor (see package rawio)
	sc  *bufio.Scanner
	mu  sync.Mutex
	enc *json.Encoder

	// With NonBlocking: lines wait here for the writer goroutine.
	queue  chan []byte
	closed bool
}

// ErrSlowClient is Send's error for a client cut off because it did not
// read what it was sent.
var ErrSlowClient = errors.New("cli: the client does not read; cut off")

// NonBlocking makes Send never block, for a daemon that must not wait on
// any one client: lines queue, up to max, for a goroutine that writes them
// (each write bounded by writeTimeout); a client that lets the queue fill,
// or whose write times out, is cut off (its connection closed, which ends
// its session, and Send returns ErrSlowClient).
func (c *Conn) NonBlocking(max int, writeTimeout time.Duration) {
	c.queue = make(chan []byte, max)
	go func() {
		for line := range c.queue {
			_ = c.c.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := c.rw.Write(line); err != nil {
				c.Close()
				for range c.queue { // drain until Close closes it
				}
				return
			}
		}
	}()
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
// 69, with a hint, when nobody serves it. The daemon must run as this
// user (or as root): a socket served by anyone else is refused (77), since
// a squatter could hand out grants and fencing numbers of its own making.
func DialControl(tool, path string) (*Conn, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, Exitf(ExitUnavailable, "no %s daemon at %s (start one with '%s serve', or give its --socket): %v", tool, path, tool, err)
	}
	uid, err := peerUID(c)
	if err != nil {
		c.Close()
		return nil, Exitf(ExitUnavailable, "%s: %v", path, err)
	}
	if uid != os.Geteuid() && uid != 0 {
		c.Close()
		return nil, Exitf(ExitNoPerm, "%s is served by uid %d, not by you (uid %d) or root: refusing to trust it", path, uid, os.Geteuid())
	}
	return NewConn(c), nil
}

// peerUID is the user ID of the process at the other end of a Unix
// socket connection (SO_PEERCRED).
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, errors.New("not a Unix socket")
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, fmt.Errorf("peer credentials: %w", cerr)
	}
	return int(cred.Uid), nil
}

// Send writes v as one JSON line (queues it, with NonBlocking).
func (c *Conn) Send(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queue == nil {
		return c.enc.Encode(v)
	}
	if c.closed {
		return ErrSlowClient
	}
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	select {
	case c.queue <- append(line, '\n'):
		return nil
	default:
		c.closeLocked()
		return ErrSlowClient
	}
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
func (c *Conn) Close() error {
	err := c.c.Close() // first: it ends a write blocked while holding mu
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
	return err
}

func (c *Conn) closeLocked() error {
	if c.queue != nil && !c.closed {
		close(c.queue)
	}
	c.closed = true
	return c.c.Close()
}

// Lines reads JSON lines from c into a channel of buf values, closed when
// the connection ends or a line is not a T: a client's view of what its
// daemon sends.
func Lines[T any](c *Conn, buf int) <-chan T {
	ch := make(chan T, buf)
	go func() {
		defer close(ch)
		for {
			var v T
			if c.Next(&v) != nil {
				return
			}
			ch <- v
		}
	}()
	return ch
}

// Accept serves a daemon's control socket until ln is closed: each
// connection is a Conn that never blocks the daemon (NonBlocking: a client
// that lets max lines wait unread, or whose write stalls for 10 s, is cut
// off), handed to serve on a goroutine of its own.
func Accept(ln net.Listener, max int, serve func(*Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		cn := NewConn(c)
		cn.NonBlocking(max, 10*time.Second)
		go serve(cn)
	}
}
