package ticketd

import (
	"encoding/json"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// fakeDaemon serves one client on a Unix socket and sends it replies.
func fakeDaemon(t *testing.T) (socket string, send func(Reply)) {
	t.Helper()
	socket = filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns := make(chan net.Conn, 1)
	go func() {
		if cn, err := ln.Accept(); err == nil {
			conns <- cn
		}
	}()
	var cn net.Conn
	return socket, func(r Reply) {
		if cn == nil {
			select {
			case cn = <-conns:
				t.Cleanup(func() { cn.Close() })
			case <-time.After(10 * time.Second):
				t.Fatal("the client did not connect")
			}
		}
		b, _ := json.Marshal(r)
		if _, err := cn.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAwaitWatchRenews: while the watchdog is not up yet (a zero Watch
// never is), the client reads the daemon's renewals and waits past the
// lease it was granted with; a lost ticket ends the wait with the reason.
func TestAwaitWatchRenews(t *testing.T) {
	socket, send := fakeDaemon(t)
	c, err := dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	got := Reply{Event: "taken", UntilNS: start.Add(50 * time.Millisecond).UnixNano()}
	renewed := start.Add(time.Hour).UnixNano()
	send(Reply{Event: "valid", UntilNS: renewed})
	done := make(chan string, 1)
	go func() { done <- awaitWatch(c, &cli.Watch{}, &got, 0) }()
	// Past the first lease, the wait goes on: the renewal moved it.
	select {
	case why := <-done:
		t.Fatalf("the wait ended (%q) before the renewed lease did", why)
	case <-time.After(time.Until(start.Add(50*time.Millisecond)) + 200*time.Millisecond):
	}
	send(Reply{Event: "lost", Reason: "this member lost its support"})
	select {
	case why := <-done:
		if why != "this member lost its support" {
			t.Fatalf("lost while waiting: %q", why)
		}
	case <-time.After(time.Minute):
		t.Fatal("a lost ticket did not end the wait")
	}
	if got.UntilNS != renewed {
		t.Fatalf("the lease was not renewed: %v", time.Unix(0, got.UntilNS))
	}
}
