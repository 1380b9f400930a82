package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/beevik/ntp"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

var bin string

func TestMain(m *testing.M) { clitest.Main(m, "clocksync", &bin) }

// startServer runs `clocksync serve` on a free port and returns its address.
func startServer(t *testing.T, args ...string) string {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(bin, append([]string{"serve", "--bind", "127.0.0.1:0", "--ready-file", ready, "--no-color"}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatal("server not ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBeevikAcceptsOurServer: github.com/beevik/ntp, an independent client,
// queries our server; its Validate passes and the offset against the same
// host's clock is within the measured round trip.
func TestBeevikAcceptsOurServer(t *testing.T) {
	addr := startServer(t, "--stratum", "1")
	resp, err := ntp.QueryWithOptions(addr, ntp.QueryOptions{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Validate(); err != nil {
		t.Fatalf("beevik/ntp rejects our server: %v (%+v)", err, resp)
	}
	if resp.Stratum != 1 || resp.Leap != ntp.LeapNoWarning {
		t.Fatalf("stratum %d leap %d", resp.Stratum, resp.Leap)
	}
	if off := resp.ClockOffset; off > resp.RTT || off < -resp.RTT {
		t.Fatalf("offset %v on one host exceeds the round trip %v", off, resp.RTT)
	}
	t.Logf("beevik/ntp: stratum %d offset %v rtt %v", resp.Stratum, resp.ClockOffset, resp.RTT)
}

// TestUnsynchronisedServerIsRefused: leap = 3 makes clients refuse us.
func TestUnsynchronisedServerIsRefused(t *testing.T) {
	addr := startServer(t)
	resp, err := ntp.QueryWithOptions(addr, ntp.QueryOptions{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Validate() == nil {
		t.Fatalf("beevik/ntp accepted an unsynchronised server: %+v", resp)
	}
	out, err := exec.Command(bin, "query", "--samples", "2", addr).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 75 {
		t.Fatalf("clocksync query of an unsynchronised server: %v\n%s", err, out)
	}
}

// TestQueryAgreesWithBeevik: our client and beevik's, against our server,
// agree on the offset within the measured delay.
func TestQueryAgreesWithBeevik(t *testing.T) {
	addr := startServer(t, "--stratum", "2")
	out, err := exec.Command(bin, "query", "--json", addr).Output()
	if err != nil {
		t.Fatalf("query: %v\n%s", err, out)
	}
	clitest.CheckJSON(t, "clocksync", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 9 || !strings.Contains(lines[8], `"event":"result"`) || !strings.Contains(lines[8], `"stratum":2`) {
		t.Fatalf("want 8 samples and a result:\n%s", out)
	}
	var ours, delay float64
	fmt.Sscanf(between(lines[8], `"offset_s":`, ","), "%g", &ours)
	fmt.Sscanf(between(lines[8], `"delay_s":`, ","), "%g", &delay)
	// Both delays, each named: RFC 5905's round trip and Tanenbaum's
	// one-way δ, half of it.
	var oneWay float64
	fmt.Sscanf(between(lines[8], `"one_way_s":`, ","), "%g", &oneWay)
	if delay <= 0 || math.Abs(oneWay-delay/2) > 1e-9 {
		t.Fatalf("one-way %g, want half the round-trip delay %g", oneWay, delay)
	}
	text, err := exec.Command(bin, "query", "--samples", "1", addr).Output()
	if err != nil || !regexp.MustCompile(`(?m)^sample 1 offset [-+]\d\.\d{6}s delay \d\.\d{6}s one-way \d\.\d{6}s$`).Match(text) ||
		!strings.Contains(string(text), " one-way ") || strings.Count(string(text), "\n") != 2 {
		t.Fatalf("query text: %v\n%s", err, text)
	}
	resp, err := ntp.QueryWithOptions(addr, ntp.QueryOptions{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	diff := time.Duration(ours*1e9) - resp.ClockOffset
	if diff < 0 {
		diff = -diff
	}
	if limit := time.Duration(delay*1e9) + resp.RTT; diff > limit {
		t.Fatalf("our offset %vs and beevik's %v differ by %v, more than the delays %v", ours, resp.ClockOffset, diff, limit)
	}
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.Index(s, b); j >= 0 {
		return s[:j]
	}
	return strings.TrimSuffix(s, "}")
}

// TestUpstreamChain: five servers on loopback, strata 1 → 2 → 3 in two
// branches, the four below stratum 1 with deliberately wrong clocks (up to
// ±400 ms off, −150 to +200 ppm). Each disciplines itself from its
// upstream; all converge to within 2 ms of stratum 1's clock, and
// beevik/ntp accepts them at the right strata.
func TestUpstreamChain(t *testing.T) {
	s1 := startServer(t, "--stratum", "1")
	s2a := startServer(t, "--upstream", s1, "--skew", "250ms", "--drift-ppm", "200", "--poll", "100ms")
	s2b := startServer(t, "--upstream", s1, "--skew", "-150ms", "--drift-ppm", "-100", "--poll", "100ms")
	s3a := startServer(t, "--upstream", s2a, "--skew", "-300ms", "--drift-ppm", "-150", "--poll", "100ms")
	s3b := startServer(t, "--upstream", s2b, "--skew", "400ms", "--drift-ppm", "50", "--poll", "100ms")
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	for _, c := range []struct {
		addr    string
		stratum uint8
	}{{s2a, 2}, {s2b, 2}, {s3a, 3}, {s3b, 3}} {
		for {
			resp, err := ntp.QueryWithOptions(c.addr, ntp.QueryOptions{Timeout: time.Second})
			if err == nil && resp.Stratum == c.stratum && resp.Validate() == nil {
				off := resp.ClockOffset
				if off < 0 {
					off = -off
				}
				if off < 2*time.Millisecond {
					t.Logf("stratum %d %s within %v of the host clock after %v", c.stratum, c.addr, resp.ClockOffset, time.Since(start).Round(time.Millisecond))
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("stratum %d %s did not converge within 30s: %+v %v", c.stratum, c.addr, resp, err)
			}
			time.Sleep(50 * time.Millisecond) // polling a remote clock's state; the deadline above is the failure bound
		}
	}
}

// TestBerkeleyCluster: five real members with virtual clocks 100–500 ms
// ahead (10–50 ppm fast) converge on the average (300 ms) within a few
// milliseconds; when the elected master is SIGKILLed, the others elect a
// new one and stay together.
func TestBerkeleyCluster(t *testing.T) {
	dir := t.TempDir()
	cl := clitest.StartCluster(t, dir, 5, bin, "berkeley", "--skew", "{id}00ms",
		"--drift-ppm", "{id}0", "--interval", "200ms", "--max-deviation", "1s", "--no-color")
	peers := "@" + filepath.Join(dir, "peers")
	converged := func(want int, center time.Duration) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, _ := exec.Command(bin, "now", "--peers", peers).Output()
			var offs []float64
			var spread float64 = -1
			for _, l := range strings.Split(string(out), "\n") {
				var id, m int
				var off float64
				if n, _ := fmt.Sscanf(l, "member %d master %d offset %fs", &id, &m, &off); n == 3 {
					offs = append(offs, off)
				}
				fmt.Sscanf(l, "spread %fs", &spread)
			}
			ok := len(offs) == want && spread >= 0 && spread < 0.005
			for _, o := range offs {
				if d := time.Duration(o*1e9) - center; d > 30*time.Millisecond || d < -30*time.Millisecond {
					ok = false
				}
			}
			if ok {
				t.Logf("%d members within %.3f ms of each other around %v", want, spread*1000, center)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no convergence within 30s:\n%s", out)
			}
			time.Sleep(100 * time.Millisecond) // polling the members' state
		}
	}
	converged(5, 300*time.Millisecond)
	cl.Ctl("kill", "5")
	converged(4, 300*time.Millisecond)
}
