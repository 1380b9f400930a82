package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// reclaimOnce: a pool of 4 members and 4 tickets with every ticket held
// (one `ticketd run` on each member; a core of 2k+2, which survives one
// crash, pkg/ticket doc.go), a waiter queued on another member;
// SIGKILL the member whose client holds one, and time until the waiter's
// command runs. It must get the killed member's ticket, and the killed
// member's command must be gone by then. Returns the time from the kill.
func reclaimOnce(t *testing.T, victim int) time.Duration {
	t.Helper()
	c := startPool(t, 4, 4)
	keepLogs(t, c)
	c.waitSettled(4)
	dir := c.Dir
	var holders []*exec.Cmd
	for i := 1; i <= 4; i++ {
		h := exec.Command(ticketdBin, "run", "--socket", c.sock(i), "--quiet", "--", "sh", "-c",
			fmt.Sprintf("echo $TICKETD_TICKET > %s/h%d.ticket; echo $$ > %s/h%d.pid; exec sleep 600", dir, i, dir, i))
		h.Stderr = stderrFile(t, filepath.Join(dir, fmt.Sprintf("h%d.err", i)))
		if err := h.Start(); err != nil {
			t.Fatal(err)
		}
		holders = append(holders, h)
	}
	t.Cleanup(func() {
		for i, h := range holders {
			_ = h.Process.Kill()
			_ = h.Wait()
			if pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(dir, fmt.Sprintf("h%d.pid", i+1))))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	pidOf := func(i int) int {
		var pid int
		clitest.WaitFor(t, 30*time.Second, func() bool {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("h%d.pid", i)))
			if err != nil {
				return false
			}
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil
		})
		return pid
	}
	for i := 1; i <= 4; i++ {
		pidOf(i)
	}
	victimChild := pidOf(victim)
	lost := strings.TrimSpace(readFile(t, filepath.Join(dir, fmt.Sprintf("h%d.ticket", victim))))
	on := victim%4 + 1
	waiter := exec.Command(ticketdBin, "run", "--socket", c.sock(on), "--quiet", "--timeout", "60s", "--", "sh", "-c",
		fmt.Sprintf("echo $TICKETD_TICKET > %s/w.ticket", dir))
	var werr strings.Builder
	waiter.Stderr = &werr
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	// The waiter is queued on its member: its status lists a waiting client.
	c.waitQueued(on, waiter, &werr)
	t0 := time.Now()
	c.Ctl("kill", fmt.Sprint(victim))
	t.Logf("member %d killed at %s", victim, t0.UTC().Format("15:04:05.000"))
	if err := waiter.Wait(); err != nil {
		ran := "its command never ran"
		if b, rerr := os.ReadFile(filepath.Join(dir, "w.ticket")); rerr == nil {
			ran = fmt.Sprintf("its command ran with ticket %s (the killed member's: %s) and the ticket was lost after", strings.TrimSpace(string(b)), lost)
		}
		t.Fatalf("the waiting client on member %d failed after %v: %v; %s\n%s\n%s", on, time.Since(t0), err, ran, werr.String(), c.statuses())
	}
	d := time.Since(t0)
	if !clitest.Gone(victimChild) {
		t.Fatalf("the killed member's command (pid %d) still ran when its ticket was handed out again", victimChild)
	}
	got := strings.TrimSpace(readFile(t, filepath.Join(dir, "w.ticket")))
	if got == lost {
		return d
	}
	// A survivor's member starved on a busy host can lose its own support
	// or lease (docs/ticketd.md, "Busy hosts"): its client is told (exit
	// 76) and its command stopped before the ticket goes to the next
	// client, which may be this waiter. That is correct, but it is not
	// the reclaim being timed: the killed member's ticket must still come
	// back (a member reports "reclaimed" for it), and the try counts as a
	// survivor's loss.
	for i, h := range holders {
		if i+1 == victim || strings.TrimSpace(readFile(t, filepath.Join(dir, fmt.Sprintf("h%d.ticket", i+1)))) != got {
			continue
		}
		done := make(chan error, 1)
		go func() { done <- h.Wait() }()
		select {
		case err := <-done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != cli.ExitLost {
				t.Fatalf("the waiter got ticket %s, not the killed member's %s, from member %d's client, which did not report a loss: %v", got, lost, i+1, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the waiter got ticket %s, not the killed member's %s, while member %d's client still held it", got, lost, i+1)
		}
		holders[i] = exec.Command("true") // waited for: the cleanup skips it
		_ = holders[i].Run()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			back := false
			for m := 1; m <= 4; m++ {
				back = back || m != victim && reclaims(readFile(t, c.File(m, "out")), lost)
			}
			if back {
				break
			}
			if time.Now().After(deadline) {
				// Say which way it failed: the survivors all lost
				// their support and the pool was founded again (every
				// ticket handed out anew, none reclaimed), or not.
				refounds := 0
				for m := 1; m <= 4; m++ {
					refounds += strings.Count(readFile(t, c.File(m, "log")), "founded it again")
				}
				t.Fatalf("the killed member's ticket %s was not reclaimed within 30 s of the waiter getting %s from member %d's client; pools founded again meanwhile: %d\n%s",
					lost, got, i+1, refounds, c.statuses())
			}
		}
		t.Logf("member %d's client lost ticket %s to its starved member and the waiter got it; the killed member's ticket %s was reclaimed too", i+1, got, lost)
		return -d
	}
	t.Fatalf("the waiter got ticket %s, not the killed member's %s, and no client had held it", got, lost)
	return d
}

// reclaims reports whether a member's stdout has a "reclaimed A..B" line
// whose range holds ticket.
func reclaims(out, ticket string) bool {
	n, err := strconv.Atoi(ticket)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(out, "\n") {
		var a, b int
		if _, err := fmt.Sscanf(l, "reclaimed %d..%d", &a, &b); err == nil && a <= n && n <= b {
			return true
		}
	}
	return false
}

// busyLoops starts n shell busy loops, each ended by the returned stop or
// after limit, whichever comes first.
func busyLoops(t *testing.T, n int, limit time.Duration) (stop func()) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	return func() {
		cancel()
		for _, cmd := range cmds {
			_ = cmd.Wait()
		}
	}
}

// TestReclaimBusyHost: SIGKILL of a holder's member is reclaimed at idle
// and beside 4 × cores busy loops (bounded in time), every time, and the
// median on the busy host is at most 3 × the idle median (docs/ticketd.md,
// "Busy hosts"). One try each by default, which checks the reclaim and
// reports its times; TICKETD_RECLAIM_TRIES=20 for the full run, which
// also holds the medians to the 3× bound. TICKETD_ROUND sets the members'
// round (roundNow).
func TestReclaimBusyHost(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process reclaim timing")
	}
	tries := 1
	if v := os.Getenv("TICKETD_RECLAIM_TRIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("TICKETD_RECLAIM_TRIES=%q: want a positive whole number", v)
		}
		tries = n
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[(len(s)-1)/2]
	}
	var idle, busy []time.Duration
	losses, failed := 0, 0
	// Each try is a subtest: its pool is stopped when it ends, and a
	// failed try is counted without hiding the others.
	try := func(what string, i int, into *[]time.Duration) {
		var d time.Duration
		skipped := true
		// A try whose pool was disrupted before the kill (waitQueued
		// skips it) is run again, as many times as there are tries.
		for void := 0; skipped && void <= tries; void++ {
			name := fmt.Sprintf("%s%02d", what, i+1)
			if void > 0 {
				name = fmt.Sprintf("%s%02d-again%d", what, i+1, void)
			}
			ok := t.Run(name, func(t *testing.T) {
				defer func() { skipped = t.Skipped() }()
				d = reclaimOnce(t, 1+i%4)
			})
			if !ok {
				skipped = false
				d = 0
				failed++
				t.Logf("%s try %d: not reclaimed (load %s)", what, i+1, loadNow())
				return
			}
		}
		if skipped {
			failed++
			t.Logf("%s try %d: the pool was disrupted before every kill (load %s)", what, i+1, loadNow())
			return
		}
		if d < 0 { // a survivor lost its ticket: not a reclaim time
			losses++
			t.Logf("%s try %d: a survivor's ticket went to the waiter; the killed member's was reclaimed (load %s)", what, i+1, loadNow())
			return
		}
		*into = append(*into, d)
		t.Logf("%s try %d: reclaimed after %v (load %s)", what, i+1, d, loadNow())
	}
	for i := range tries {
		try("idle", i, &idle)
	}
	// 4 × cores busy loops, or TICKETD_BUSY_LOOPS of them: 0 where the
	// host is already that busy with loops of its own (the load is logged
	// with every try).
	loops := 4 * runtime.NumCPU()
	if v := os.Getenv("TICKETD_BUSY_LOOPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("TICKETD_BUSY_LOOPS=%q: want a whole number", v)
		}
		loops = n
	}
	stop := busyLoops(t, loops, time.Duration(tries)*90*time.Second)
	for i := range tries {
		try("busy", i, &busy)
	}
	stop()
	if failed > 0 {
		t.Errorf("%d of %d tries not reclaimed", failed, 2*tries)
	}
	if len(idle) == 0 || len(busy) == 0 {
		t.Logf("no median to compare: of %d tries %d were not reclaimed and %d had a survivor's ticket reach the waiter (idle %v, busy %v)", 2*tries, failed, losses, idle, busy)
		return
	}
	t.Logf("reclaimed %d of %d idle (median %v, worst %v: %v) and %d of %d beside %d busy loops (median %v, worst %v: %v); %d tries a survivor's ticket went to the waiter (%s)",
		len(idle), tries, median(idle), slices.Max(idle), idle, len(busy), tries, loops, median(busy), slices.Max(busy), busy, losses, roundNow())
	// The 3× bound is a measurement over many tries, not a verdict on one:
	// with the default single try it is only reported (one busy try took
	// 5.3 s against 1.6 s idle on a 2-core CI host whose own test run was
	// the load).
	if median(busy) > 3*median(idle) {
		if tries >= 5 {
			t.Errorf("busy median %v above 3 × the idle median %v", median(busy), median(idle))
		} else {
			t.Logf("busy median %v above 3 × the idle median %v (a measurement needs TICKETD_RECLAIM_TRIES ≥ 5)", median(busy), median(idle))
		}
	}
}
