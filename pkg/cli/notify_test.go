package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// listenNotify is a service manager's socket at name (a path, or '@' and
// an abstract name); it returns the datagrams as they come.
func listenNotify(t *testing.T, name string) <-chan string {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				close(ch)
				return
			}
			ch <- string(buf[:k])
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no datagram within 10s")
		return ""
	}
}

// TestNotifierSocketKinds: NOTIFY_SOCKET may name a path or, with '@', an
// abstract socket; anything else, or nothing, gives the nil Notifier,
// whose methods do nothing.
func TestNotifierSocketKinds(t *testing.T) {
	path := t.TempDir() + "/n"
	if len(path) > 100 {
		dir, _ := os.MkdirTemp("", "sd")
		t.Cleanup(func() { os.RemoveAll(dir) })
		path = dir + "/n"
	}
	abstract := fmt.Sprintf("@roundtable-test-%d-%d", os.Getpid(), rand.Uint64())
	for _, name := range []string{path, abstract} {
		ch := listenNotify(t, name)
		t.Setenv("NOTIFY_SOCKET", name)
		n := NotifierFromEnv()
		if n == nil {
			t.Fatalf("%s: no notifier", name)
		}
		n.Ready("serving\non two lines")
		want := fmt.Sprintf("READY=1\nSTATUS=serving on two lines\nMAINPID=%d", os.Getpid())
		if got := next(t, ch); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
		n.Stopping()
		if got := next(t, ch); got != "STOPPING=1" {
			t.Errorf("%s: %q, want STOPPING=1", name, got)
		}
	}
	for _, v := range []string{"", "relative/path", "/nonexistent/socket"} {
		t.Setenv("NOTIFY_SOCKET", v)
		if n := NotifierFromEnv(); n != nil {
			t.Errorf("NOTIFY_SOCKET=%q gave a notifier", v)
		}
	}
	var n *Notifier
	n.Ready("x")
	n.Status("x")
	n.Stopping()
	n.Watch(context.Background(), nil)
}

// TestNotifierEnv: the watchdog is due at half of WATCHDOG_USEC, and only
// for this process (WATCHDOG_PID).
func TestNotifierEnv(t *testing.T) {
	abstract := fmt.Sprintf("@roundtable-test-%d-%d", os.Getpid(), rand.Uint64())
	listenNotify(t, abstract)
	cases := []struct {
		usec, pid string
		want      time.Duration
	}{
		{"", "", 0},
		{"2000000", "", time.Second},
		{"2000000", fmt.Sprint(os.Getpid()), time.Second},
		{"2000000", "1", 0},
		{"soon", "", 0},
	}
	for _, c := range cases {
		t.Setenv("NOTIFY_SOCKET", abstract)
		t.Setenv("WATCHDOG_USEC", c.usec)
		t.Setenv("WATCHDOG_PID", c.pid)
		n := NotifierFromEnv()
		if n == nil || n.Watchdog != c.want {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: %+v, want a watchdog every %v", c.usec, c.pid, n, c.want)
		}
	}
}

// stuckRunner is a driver whose loop turns only while the channel turn
// lets it: Do returns once it may.
type stuckRunner struct{ turn chan struct{} }

func (stuckRunner) Run(ctx context.Context, emit func(node.Event)) error { <-ctx.Done(); return nil }

func (r stuckRunner) Do(ctx context.Context, fn func()) error {
	select {
	case <-r.turn:
		fn()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type leaderEvent struct{}

func (leaderEvent) Kind() string   { return "leader" }
func (leaderEvent) String() string { return "leader 2 term 5" }

// TestWatchdogFollowsTheLoop: WATCHDOG=1 goes out only after a round trip
// through the driver's loop; a wedged loop sends none, so systemd
// restarts the service. Notable events become STATUS= lines.
func TestWatchdogFollowsTheLoop(t *testing.T) {
	abstract := fmt.Sprintf("@roundtable-test-%d-%d", os.Getpid(), rand.Uint64())
	ch := listenNotify(t, abstract)
	t.Setenv("NOTIFY_SOCKET", abstract)
	n := NotifierFromEnv()
	n.Watchdog = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := stuckRunner{turn: make(chan struct{})}
	m := &Member{ID: 4}
	emit := m.notifyWith(ctx, n, r, func(node.Event) {})
	// Wedged: twenty intervals without a ping.
	select {
	case got := <-ch:
		t.Fatalf("%q from a wedged loop", got)
	case <-time.After(20 * n.Watchdog):
	}
	// Turning: pings.
	go func() {
		for {
			select {
			case r.turn <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	if got := next(t, ch); got != "WATCHDOG=1" {
		t.Fatalf("%q, want WATCHDOG=1", got)
	}
	emit(leaderEvent{})
	for {
		got := next(t, ch)
		if strings.HasPrefix(got, "STATUS=") {
			if got != "STATUS=member 4: leader 2 term 5" {
				t.Fatalf("%q", got)
			}
			break
		}
	}
}
