package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
	"github.com/roundtable-go/roundtable/pkg/ticketd"
)

// watcher is one `ticketd watch --json` and the notices it printed.
type watcher struct {
	mu      sync.Mutex
	notices []ticketd.Notice
	bad     []string
	lines   []byte // everything printed, checked against docs/json.md
}

func (c *cluster) watch(member int) *watcher {
	c.T.Helper()
	ready := filepath.Join(c.Dir, fmt.Sprintf("watch-%d.ready", member))
	cmd := exec.Command(ticketdBin, "watch", "--json", "--socket", c.sock(member), "--ready-file", ready)
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.T.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.T.Fatal(err)
	}
	c.T.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	w := &watcher{}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var n ticketd.Notice
			w.mu.Lock()
			w.lines = append(append(w.lines, sc.Bytes()...), '\n')
			if err := json.Unmarshal(sc.Bytes(), &n); err != nil || n.Event == "" || n.By == 0 {
				w.bad = append(w.bad, sc.Text())
			} else {
				w.notices = append(w.notices, n)
			}
			w.mu.Unlock()
		}
	}()
	// From the ready file on, the watcher misses nothing the member hears.
	clitest.WaitFor(c.T, 20*time.Second, func() bool { _, err := os.Stat(ready); return err == nil })
	return w
}

// await waits until a notice matches and returns it.
func (w *watcher) await(t *testing.T, what string, match func(ticketd.Notice) bool) ticketd.Notice {
	t.Helper()
	var got ticketd.Notice
	clitest.WaitFor(t, 20*time.Second, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.bad) > 0 {
			t.Fatalf("watch printed lines that are not notices: %q", w.bad)
		}
		for _, n := range w.notices {
			if match(n) {
				got = n
				return true
			}
		}
		return false
	})
	if got.Event == "" {
		t.Fatalf("no notice %s", what)
	}
	w.mu.Lock()
	clitest.CheckJSON(t, "ticketd watch", w.lines)
	w.mu.Unlock()
	return got
}

// TestWatch: a use of a ticket on one member is seen by `ticketd watch` on
// another, through PrCast, with the epoch the command got.
func TestWatch(t *testing.T) {
	c := startPool(t, 3, 2, "--round", "500ms") // a busy host's stalls stay inside the support window
	c.waitCore(2)
	w := c.watch(3)
	file := filepath.Join(c.Dir, "witness")
	cl := c.run(1, file, 10*time.Millisecond)
	cl.served(t, "the client on member 1")
	var e entry
	for _, x := range readWitness(t, file) {
		if x.what == "enter" {
			e = x
		}
	}
	taken := w.await(t, fmt.Sprintf("taken %d by 1", e.ticket), func(n ticketd.Notice) bool {
		return n.Event == "taken" && n.By == 1 && int(n.Ticket) == e.ticket && n.Epoch == e.epoch
	})
	w.await(t, "released", func(n ticketd.Notice) bool {
		return n.Event == "released" && n.By == 1 && n.Ticket == taken.Ticket && n.Epoch == taken.Epoch
	})
}
