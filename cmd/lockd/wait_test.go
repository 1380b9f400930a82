package main

import (
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// runLockdFor runs lockd with a limit (clitest.RunFor).
func runLockdFor(limit time.Duration, args ...string) (code int, stderr string, took time.Duration) {
	return clitest.RunFor(limit, lockdBin, args...)
}

// startCost measures what a client costs that the daemon answers at
// once (start-up, connection, reply, exit) on this machine now: every
// deadline below is allowed twice that on top of its promise.
func startCost(t *testing.T, c *cluster) time.Duration {
	t.Helper()
	var worst time.Duration
	for i := 0; i < 3; i++ {
		code, stderr, took := runLockdFor(time.Minute, "run", "--socket", c.sock(2), "--nonblock", "cost", "--", "true")
		if code != 0 {
			t.Fatalf("a free lock through a live daemon: exit %d: %s", code, stderr)
		}
		worst = max(worst, took)
	}
	t.Logf("a client the daemon answers at once takes up to %v", worst)
	return worst
}

// TestWaitsAgainstStoppedDaemon: against a SIGSTOPped daemon, --nonblock
// answers 69 within about a second, --timeout D ends within D plus 10%
// with 69 and says the daemon does not answer (not "no quorum"), a wait
// says so on stderr after a second, and --quiet silences that.
func TestWaitsAgainstStoppedDaemon(t *testing.T) {
	c := startDaemons(t, 3)
	slack := startCost(t, c)
	c.Ctl("pause", "1")
	t.Cleanup(func() { c.Ctl("resume", "1") })

	limit := cli.NonBlockLimit + cli.ProbeWait + 2*slack
	code, stderr, took := runLockdFor(limit+20*time.Second, "run", "--socket", c.sock(1), "--nonblock", "L", "--", "true")
	if took > limit {
		slack = max(slack, clitest.SpawnCost(lockdBin))
		limit = cli.NonBlockLimit + cli.ProbeWait + 2*slack
	}
	if code != cli.ExitUnavailable || took > limit || !strings.Contains(stderr, "does not answer") {
		t.Fatalf("--nonblock against a stopped daemon: exit %d after %v (want 69 within %v, saying the daemon does not answer): %s", code, took, limit, stderr)
	}

	const d = 2 * time.Second
	limit = d + d/10 + 2*slack
	code, stderr, took = runLockdFor(limit+20*time.Second, "run", "--socket", c.sock(1), "--timeout", d.String(), "L", "--", "true")
	if took > limit {
		slack = max(slack, clitest.SpawnCost(lockdBin))
		limit = d + d/10 + 2*slack
	}
	if code != cli.ExitUnavailable || took > limit || !strings.Contains(stderr, "does not answer") || strings.Contains(stderr, "quorum") {
		t.Fatalf("--timeout %v against a stopped daemon: exit %d after %v (want 69 within %v, blaming the daemon): %s", d, code, took, limit, stderr)
	}
	if !strings.Contains(stderr, "lockd: waited 1s for L: the daemon at "+c.sock(1)+" does not answer") {
		t.Errorf("a wait of %v said nothing while it waited: %q", d, stderr)
	}
	code, stderr, _ = runLockdFor(limit+20*time.Second, "run", "--quiet", "--socket", c.sock(1), "--timeout", d.String(), "L", "--", "true")
	if code != cli.ExitUnavailable || strings.Contains(stderr, "waited") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("--quiet: exit %d, want 69 and the final error alone: %q", code, stderr)
	}
}

// TestWaitSaysWhoHolds: a client waiting behind a holder says who holds
// the lock, since when, and whether there is a quorum, and its timeout
// (75) names the holder too.
func TestWaitSaysWhoHolds(t *testing.T) {
	c := startDaemons(t, 3)
	c.hold(1, "L")
	code, stderr, _ := runLockdFor(time.Minute, "run", "--socket", c.sock(2), "--timeout", "2500ms", "L", "--", "true")
	if code != cli.ExitBusy {
		t.Fatalf("waiting behind a holder: exit %d, want 75: %s", code, stderr)
	}
	t.Logf("stderr:\n%s", stderr)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "lockd: waited 1s for L: held by member 1 (client ") ||
		!strings.Contains(lines[0], " since ") || !strings.Contains(lines[0], "quorum yes") ||
		!strings.Contains(lines[1], "timed out after 2.") || !strings.Contains(lines[1], "held by member 1") {
		t.Fatalf("want one report naming holder 1 and the quorum, then a timeout naming it:\n%s", stderr)
	}
}
