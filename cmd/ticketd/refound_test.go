package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEpochsAcrossRefounds: three members with a key are all stopped
// (SIGSTOP) for 4 s and resumed, three times, with clients taking tickets
// before, between and after. Each stall ends the core (every member loses
// its support) and one member founds the pool again. Every (ticket, epoch)
// a client saw must be new and, per ticket, above every one before it:
// the members' mark travels between them and outlives each machine, so a
// pool founded again starts above every epoch any member issued. Run with
// the default state files (no flag), with explicit ones, and with a state
// file on the founder only.
func TestEpochsAcrossRefounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(dir string) []string
	}{
		{"default state files", func(string) []string { return nil }},
		{"explicit state files", func(dir string) []string { return []string{"--state-file", filepath.Join(dir, "{id}.state")} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := filepath.Join(t.TempDir(), "pool.key")
			if err := os.WriteFile(key, []byte(strings.Repeat("5a", 32)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			// Rounds of 250 ms, as in TestTwentyClientsFiveMembers: a
			// member starved of CPU for a support window while the suite
			// runs under the race detector would lose a client's ticket
			// (exit 76, correctly), which is not what this test is about.
			c := startPool(t, 3, 4, append([]string{"--key-file", key, "--round", "250ms"}, tc.args(t.TempDir())...)...)
			c.waitSettled(3)
			file := filepath.Join(c.Dir, "witness")
			take := func(round int) {
				t.Helper()
				var cls []*client
				for m := 1; m <= 3; m++ {
					cls = append(cls, c.run(m, file, 20*time.Millisecond, "--timeout", "60s"))
				}
				for i, cl := range cls {
					// A starved host's 76 (hostLost) starts the client
					// again, at most twice; anything else is a failure.
					cl.served(t, fmt.Sprintf("round %d, a client of member %d", round, i+1))
				}
			}
			take(0)
			for round := 1; round <= 3; round++ {
				for m := 1; m <= 3; m++ {
					c.Ctl("pause", fmt.Sprint(m))
				}
				// The stall itself (the fault, not a wait for anything):
				// several support windows, so that the core ends.
				time.Sleep(4 * time.Second)
				for m := 1; m <= 3; m++ {
					c.Ctl("resume", fmt.Sprint(m))
				}
				take(round)
			}
			sections := checkWitness(t, file, 4, nil)
			_, refounds := c.refounding(1, 2, 3)
			if refounds < 2 {
				t.Fatalf("%d refounds in 3 stalls of every member: the test did not reproduce the ended pool\n%s", refounds, c.statuses())
			}
			es := readWitness(t, file)
			seen := map[[2]uint64]bool{}
			for _, e := range es {
				if e.what != "enter" {
					continue
				}
				k := [2]uint64{uint64(e.ticket), e.epoch}
				if seen[k] {
					t.Fatalf("ticket %d epoch %d handed out twice", e.ticket, e.epoch)
				}
				seen[k] = true
			}
			if tc.name == "default state files" {
				// The default state file, in the private directory
				// (XDG_RUNTIME_DIR is the pool's directory here), covers
				// every epoch a command saw.
				top := uint64(0)
				for _, e := range es {
					top = max(top, e.epoch)
				}
				kept := uint64(0)
				for m := 1; m <= 3; m++ {
					b, err := os.ReadFile(filepath.Join(c.Dir, fmt.Sprintf("ticketd-roundtable-%d.epoch", m)))
					if err == nil {
						var v uint64
						fmt.Sscan(string(b), &v)
						kept = max(kept, v)
					}
				}
				if kept < top {
					t.Fatalf("the default state files hold %d, below epoch %d handed out", kept, top)
				}
			}
			t.Logf("%d uses of a ticket, %d refounds, every (ticket, epoch) new and rising", sections, refounds)
		})
	}
}

// TestFoundNeedsStateFile: a member that keeps no state file may not
// found a pool (restarted, it would hand out its epochs again): 64.
func TestFoundNeedsStateFile(t *testing.T) {
	dir := t.TempDir()
	code, stderr := serveExit(t, "--id", "9", "--bind", "127.0.0.1:0", "--tickets", "3", "--state-file", "", "--socket", filepath.Join(dir, "s"))
	if code != 64 || !strings.Contains(stderr, "needs a --state-file") {
		t.Fatalf("founding with --state-file '': exit %d, want 64\n%s", code, stderr)
	}
}
