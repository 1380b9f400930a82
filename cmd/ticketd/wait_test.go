package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// runTicketdFor runs ticketd with a limit (clitest.RunFor).
func runTicketdFor(limit time.Duration, args ...string) (code int, stderr string, took time.Duration) {
	return clitest.RunFor(limit, ticketdBin, args...)
}

// TestWaitsSayWhyAndEnd: a client waiting for a ticket says on stderr what
// it waits for after a second (--quiet: nothing); against a SIGSTOPped
// daemon --nonblock answers 69 within about a second and --timeout D ends
// within D plus 10% with 69, saying the daemon does not answer.
func TestWaitsSayWhyAndEnd(t *testing.T) {
	// Rounds of 250 ms, as in TestEpochsAcrossRefounds: the held ticket's
	// lease is a few rounds, and at load 20 the default 30 ms rounds let
	// a starved `hold` (or its daemon) lose it between two steps below
	// (exit 76, correctly), which then hands the next client the ticket.
	c := startPool(t, 1, 1, "--round", "250ms")
	c.waitCore(1)
	// What a client costs that the daemon answers at once, on this machine
	// now: the deadlines below are allowed twice that on top of their promise.
	var slack time.Duration
	for i := 0; i < 3; i++ {
		code, stderr, took := runTicketdFor(time.Minute, "run", "--socket", c.sock(1), "--nonblock", "--", "true")
		if code != 0 {
			t.Fatalf("a free ticket: exit %d: %s", code, stderr)
		}
		slack = max(slack, took)
	}
	t.Logf("a client the daemon answers at once takes up to %v", slack)
	h := exec.Command(ticketdBin, "hold", "--socket", c.sock(1))
	in, _ := h.StdinPipe()
	out, _ := h.StdoutPipe()
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); h.Process.Kill(); h.Wait() })
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(l, "taken ") {
		t.Fatalf("hold: %q %v", l, err)
	}

	code, stderr, _ := runTicketdFor(time.Minute, "run", "--socket", c.sock(1), "--timeout", "2500ms", "--", "true")
	t.Logf("stderr:\n%s", stderr)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != cli.ExitBusy || len(lines) != 2 || !strings.HasPrefix(lines[0], "ticketd: waited 1s for a ticket: member 1 holds 1 of the pool's 1 tickets and has lent 1") ||
		!strings.Contains(lines[1], "timed out after 2.") {
		t.Fatalf("waiting behind the only ticket: exit %d, want 75 after one report:\n%s", code, stderr)
	}
	code, stderr, _ = runTicketdFor(time.Minute, "run", "--quiet", "--socket", c.sock(1), "--timeout", "1500ms", "--", "true")
	if code != cli.ExitBusy || strings.Contains(stderr, "waited") {
		t.Fatalf("--quiet: exit %d, want 75 and no report:\n%s", code, stderr)
	}

	c.Ctl("pause", "1")
	t.Cleanup(func() { c.Ctl("resume", "1") })
	limit := cli.NonBlockLimit + cli.ProbeWait + 2*slack
	code, stderr, took := runTicketdFor(limit+20*time.Second, "run", "--socket", c.sock(1), "--nonblock", "--", "true")
	if took > limit {
		slack = max(slack, clitest.SpawnCost(ticketdBin))
		limit = cli.NonBlockLimit + cli.ProbeWait + 2*slack
	}
	if code != cli.ExitUnavailable || took > limit || !strings.Contains(stderr, "does not answer") {
		t.Fatalf("--nonblock against a stopped daemon: exit %d after %v (want 69 within %v): %s", code, took, limit, stderr)
	}
	const d = 2 * time.Second
	limit = d + d/10 + 2*slack
	code, stderr, took = runTicketdFor(limit+20*time.Second, "run", "--socket", c.sock(1), "--timeout", d.String(), "--", "true")
	if took > limit {
		slack = max(slack, clitest.SpawnCost(ticketdBin))
		limit = d + d/10 + 2*slack
	}
	if code != cli.ExitUnavailable || took > limit || !strings.Contains(stderr, "does not answer") {
		t.Fatalf("--timeout %v against a stopped daemon: exit %d after %v (want 69 within %v): %s", d, code, took, limit, stderr)
	}
}

// TestBackgroundJobEndsWithRun: SIGINT to `ticketd run -- sh -c 'sleep 30
// & wait'` ends the shell, and its background sleep (started with SIGINT
// ignored, as a non-interactive shell does) is gone by the time ticketd
// run exits, before the ticket is given back.
func TestBackgroundJobEndsWithRun(t *testing.T) {
	c := startPool(t, 1, 1)
	c.waitCore(1)
	pidFile := filepath.Join(t.TempDir(), "job")
	cmd := exec.Command(ticketdBin, "run", "--socket", c.sock(1), "--", "sh", "-c", `sleep 30 & echo $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`, pidFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	job := clitest.WaitPID(t, 20*time.Second, pidFile)
	t.Cleanup(func() { syscall.Kill(job, syscall.SIGKILL) })
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if !clitest.Gone(job) {
		t.Fatalf("the background job %d outlived ticketd run (%v): %s", job, err, stderr.String())
	}
	if exitCode(err) != 128+int(syscall.SIGINT) {
		t.Errorf("ticketd run after SIGINT: exit %d, want %d: %s", exitCode(err), 128+int(syscall.SIGINT), stderr.String())
	}
}

// TestWaitEndSaid: a client whose wait said so on stderr says when it
// ends, with the ticket and epoch it got, so that a command that hangs
// afterwards is not read as a wait that never ended.
func TestWaitEndSaid(t *testing.T) {
	c := startPool(t, 1, 1, "--round", "250ms")
	c.waitCore(1)
	h := exec.Command(ticketdBin, "hold", "--socket", c.sock(1))
	in, _ := h.StdinPipe()
	out, _ := h.StdoutPipe()
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); h.Process.Kill(); h.Wait() })
	if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(l, "taken ") {
		t.Fatalf("hold: %q %v", l, err)
	}
	r := exec.Command(ticketdBin, "run", "--socket", c.sock(1), "--timeout", "60s", "--", "true")
	errPipe, _ := r.StderrPipe()
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Process.Kill() })
	sc := bufio.NewScanner(errPipe)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "waited 1s for a ticket") {
			in.Close() // the holder gives the ticket back: the wait ends
		}
	}
	err := r.Wait()
	// The report comes right after the wait's (the watchdog may warn of
	// a busy host after it).
	if exitCode(err) != 0 || len(lines) < 2 || !strings.Contains(lines[0], "waited 1s") || !strings.HasPrefix(lines[1], "ticketd: got ticket 0 epoch ") {
		t.Fatalf("a wait that ended: exit %d, stderr:\n%s", exitCode(err), strings.Join(lines, "\n"))
	}
	t.Logf("stderr:\n%s", strings.Join(lines, "\n"))
}
