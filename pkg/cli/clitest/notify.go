package clitest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Notified is one sd_notify datagram a daemon sent, and when it arrived.
type Notified struct {
	At   time.Time
	Text string
}

// NotifySocket is a fake service manager's notification socket: a
// unixgram socket in a fresh short temporary directory (a socket path
// must fit in 108 bytes) that records every datagram.
type NotifySocket struct {
	Path string
	got  chan Notified
	mu   sync.Mutex
	all  []string // every datagram so far
}

// NewNotifySocket opens a NotifySocket, closed when the test ends.
func NewNotifySocket(t testing.TB) *NotifySocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	n := &NotifySocket{Path: path, got: make(chan Notified, 1024)}
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				close(n.got)
				return
			}
			n.mu.Lock()
			n.all = append(n.all, string(buf[:k]))
			n.mu.Unlock()
			select {
			case n.got <- Notified{At: time.Now(), Text: string(buf[:k])}:
			default: // a test that stopped reading
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); os.RemoveAll(dir) })
	return n
}

// Env is the environment a service manager gives a Type=notify service
// watched every watchdog (zero: no watchdog).
func (n *NotifySocket) Env(watchdog time.Duration) []string {
	env := append(os.Environ(), "NOTIFY_SOCKET="+n.Path)
	if watchdog > 0 {
		env = append(env, fmt.Sprintf("WATCHDOG_USEC=%d", watchdog.Microseconds()))
	}
	return env
}

// Saw reports whether any datagram so far contained s.
func (n *NotifySocket) Saw(s string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range n.all {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// Await returns the first datagram, from now on, that has line among its
// lines ("READY=1"), or one whose line starts with it when it ends in
// '='; it fails the test after limit.
func (n *NotifySocket) Await(t testing.TB, limit time.Duration, line string) Notified {
	t.Helper()
	timeout := time.After(limit)
	for {
		select {
		case m, ok := <-n.got:
			if !ok {
				t.Fatalf("notify socket closed while waiting for %q", line)
			}
			for _, l := range strings.Split(m.Text, "\n") {
				if l == line || strings.HasSuffix(line, "=") && strings.HasPrefix(l, line) {
					return m
				}
			}
		case <-timeout:
			t.Fatalf("no %q on the notify socket within %v", line, limit)
		}
	}
}

// CheckNotify starts bin with args under a fake service manager that
// watches it every watchdog, and checks that it sends READY=1, WATCHDOG=1
// about every watchdog/2 (never faster, not much slower, over pings
// pings) and STOPPING=1 when sent SIGTERM, and exits. ready, when given,
// is called once READY=1 has arrived, with the socket, to check more.
func CheckNotify(t *testing.T, limit, watchdog time.Duration, pings int, ready func(*NotifySocket), bin string, args ...string) {
	t.Helper()
	ns := NewNotifySocket(t)
	cmd := exec.Command(bin, args...)
	cmd.Env = ns.Env(watchdog)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// Input kept open to the end: a daemon that reads it (mcast run) must
	// not see it end.
	in, keep, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	cmd.Stdin = in
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { cmd.Process.Kill(); <-done }()
	ns.Await(t, limit, "READY=1")
	if ready != nil {
		ready(ns)
	}
	interval := watchdog / 2
	first := ns.Await(t, limit, "WATCHDOG=1")
	prev := first
	for i := 0; i < pings; i++ {
		m := ns.Await(t, limit, "WATCHDOG=1")
		// A ping is due every interval; one that waited for the loop may
		// be followed by the next on time, so the gap may shrink to half.
		if gap := m.At.Sub(prev.At); gap < interval/3 {
			t.Errorf("WATCHDOG=1 %v after the one before; due every %v", gap, interval)
		}
		prev = m
	}
	// Over several pings a free-running goroutine would be far faster and a
	// stopped loop far slower; the bound allows a loaded host's delays.
	if mean := prev.At.Sub(first.At) / time.Duration(pings); mean < interval*2/3 || mean > 4*interval {
		t.Errorf("WATCHDOG=1 every %v on average; due every %v", mean, interval)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	ns.Await(t, limit, "STOPPING=1")
	select {
	case err := <-done:
		done <- err // for the deferred kill
	case <-time.After(limit):
		t.Errorf("%s did not exit within %v of SIGTERM", filepath.Base(bin), limit)
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr.String())
	}
}

// FreeAddr is a loopback UDP address free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}
