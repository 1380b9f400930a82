package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestWaitServer: clocksync wait exits 0 at once against a synchronised
// server this host's clock agrees with; 75 after --timeout against one
// 500 ms off (--skew) or unsynchronised, printing a line of progress a
// second; and 0 against a server slewing towards its upstream, once it
// has come within the bound.
func TestWaitServer(t *testing.T) {
	good := startServer(t, "--stratum", "1")
	code, stderr, took := clitest.RunFor(20*time.Second, bin, "wait", "--server", good, "--max-offset", "50ms", "--timeout", "10s")
	if code != 0 || !strings.Contains(stderr, "within 50ms") {
		t.Fatalf("synchronised server: exit %d after %v\n%s", code, took, stderr)
	}

	skewed := startServer(t, "--stratum", "1", "--skew", "500ms")
	unsynced := startServer(t)
	progress := regexp.MustCompile(`(?m)^clocksync: waiting \ds of 2.5s: `)
	for _, c := range []struct{ server, why string }{
		{skewed, `not within 100ms after 2.5s: .* offset \+0\.(49|50)`},
		{unsynced, `not within 100ms after 2.5s: .* is not synchronised`},
	} {
		code, stderr, took = clitest.RunFor(20*time.Second, bin, "wait", "--server", c.server, "--max-offset", "100ms", "--timeout", "2500ms")
		if code != cli.ExitBusy || !regexp.MustCompile(c.why).MatchString(stderr) || took < 2500*time.Millisecond {
			t.Errorf("%s: exit %d after %v, want 75 after 2.5s naming %q\n%s", c.server, code, took, c.why, stderr)
		}
		// One line a second: two while waiting 2.5 s (a stalled host may
		// skip a second, never add one).
		if n := len(progress.FindAllString(stderr, -1)); n < 1 || n > 2 {
			t.Errorf("%s: %d progress lines in 2.5 s, want 2:\n%s", c.server, n, stderr)
		}
	}

	// 300 ms ahead, slewed at up to 83 ms/s towards good: within 50 ms
	// after about 3 s, as chrony-wait's users wait before starting a service.
	slewing := startServer(t, "--upstream", good, "--poll", "100ms", "--skew", "300ms")
	code, stderr, took = clitest.RunFor(60*time.Second, bin, "wait", "--server", slewing, "--max-offset", "50ms", "--timeout", "50s")
	if code != 0 || took < time.Second {
		t.Fatalf("slewing server: exit %d after %v, want 0 after the slew (≥ 1 s)\n%s", code, took, stderr)
	}
	t.Logf("a server 300 ms off came within 50 ms after %v", took.Round(time.Millisecond))
}

// TestWaitGroup: with --peers, clocksync wait exits 0 once every Berkeley
// member answers and their clocks agree within --max-offset, and 75 while
// a member is silent.
func TestWaitGroup(t *testing.T) {
	dir := t.TempDir()
	cl := clitest.StartCluster(t, dir, 3, bin, "berkeley", "--skew", "{id}00ms", "--interval", "200ms", "--max-deviation", "1s", "--no-color")
	peers := "@" + filepath.Join(dir, "peers")
	code, stderr, took := clitest.RunFor(60*time.Second, bin, "wait", "--peers", peers, "--max-offset", "20ms", "--timeout", "50s")
	if code != 0 || !strings.Contains(stderr, "3 members spread") {
		t.Fatalf("converging group: exit %d after %v\n%s", code, took, stderr)
	}
	cl.Ctl("kill", "3")
	code, stderr, took = clitest.RunFor(20*time.Second, bin, "wait", "--peers", peers, "--max-offset", "20ms", "--timeout", "1500ms")
	if code != cli.ExitBusy || !strings.Contains(stderr, "2 of 3 members answered") {
		t.Errorf("a silent member: exit %d after %v, want 75\n%s", code, took, stderr)
	}
}

// TestWaitUsage: bad flags are usage errors (64) with a message.
func TestWaitUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--max-offset", "0"},
		{"--max-offset", "soon"},
		{"--timeout", "-1s"},
		{"--server", "not an address:x"},
		{"--server", "127.0.0.1:1", "--peers", "1=127.0.0.1:2"},
		{"extra"},
	} {
		code, stderr, _ := clitest.RunFor(20*time.Second, bin, append([]string{"wait"}, args...)...)
		if code != cli.ExitUsage || strings.TrimSpace(stderr) == "" {
			t.Errorf("wait %v: exit %d, want 64 with a message\n%s", args, code, stderr)
		}
	}
}
