package ticketd

import (
	"encoding/json"
	"net"
	"path/filepath"
	"testing"
	"time"
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

// TestAwaitWatchRenews: while the watchdog is not up yet (a nil channel
// never closes), the client reads the daemon's renewals and waits past the
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
	go func() { done <- awaitWatch(c, nil, &got, 0) }()
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

// TestAwaitWatchTakesQueuedRenewal: with the watchdog already up, a
// renewal the daemon sent after the grant and before the client read it
// still moves the lease the command starts with (a client not run for a
// while after its grant would otherwise start against the first lease,
// run out meanwhile, and lose the ticket before its command ran). Twenty
// times: a wait that picked between the watchdog and the queue at random
// passes all twenty once in a million.
func TestAwaitWatchTakesQueuedRenewal(t *testing.T) {
	socket, send := fakeDaemon(t)
	c, err := dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	up := make(chan struct{})
	close(up)
	for i := range 20 {
		got := Reply{Event: "taken", UntilNS: time.Now().Add(-time.Millisecond).UnixNano()}
		renewed := time.Now().Add(time.Hour).UnixNano() + int64(i)
		send(Reply{Event: "valid", UntilNS: renewed})
		// The renewal is read (into the client's queue) before the wait.
		for deadline := time.Now().Add(time.Minute); len(c.Replies()) == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the renewal never reached the client")
			}
		}
		if why := awaitWatch(c, up, &got, 0); why != "" {
			t.Fatalf("lost: %q", why)
		}
		if got.UntilNS != renewed {
			t.Fatalf("try %d: the command would start with the first lease (%v), not the renewal queued behind it", i+1, time.Unix(0, got.UntilNS))
		}
	}
}

// TestDescribeWaitSaysWhyNotLent: the waiting client's report counts the
// tickets the member's processes own (not its slots), and says why one
// it owns is not lent (its Member's refusal, and for how long) and that
// a refound is being decided.
func TestDescribeWaitSaysWhyNotLent(t *testing.T) {
	st := map[string]any{"member": 1, "tickets": 4, "members": []int{2, 3}, "waiting": 1,
		"slots": []any{
			map[string]any{"lent": false, "refused": "no lease from a majority of the members (leases granted by 1 of 3, 2 needed)", "refused_ms": 12345,
				"machine": map[string]any{"state": "coordinator", "ticket": 2}},
			map[string]any{"lent": false, "machine": map[string]any{"state": "idle", "ticket": 0}},
		},
		"refound": map[string]any{"frozen": true}}
	raw, _ := json.Marshal(st)
	got := describeWait("s", raw, nil)
	want := "member 1 holds 1 of the pool's 4 tickets and has lent 0; 1 clients wait there (this one included); it knows 2 other members; " +
		"it may not lend ticket 2 (coordinator) for 12.3s: no lease from a majority of the members (leases granted by 1 of 3, 2 needed); " +
		"a refound of the pool is being decided (no joins meanwhile)"
	if got != want {
		t.Fatalf("report:\n got %s\nwant %s", got, want)
	}
}
