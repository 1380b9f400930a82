package main

// Interoperability with chrony, the reference this tool is measured
// against. scripts/test.sh installs chrony when missing and sets
// CLOCKSYNC_REQUIRE_CHRONY=1, so a missing chronyd fails the run there;
// elsewhere these tests skip. chronyd only ever runs with -Q (measure,
// never set) or -x (never touch the clock), on loopback, with its own
// configuration: never the Debian default pool.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beevik/ntp"
)

func chronyd(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chronyd")
	if err != nil {
		for _, c := range []string{"/usr/sbin/chronyd", "/sbin/chronyd"} {
			if _, err := os.Stat(c); err == nil {
				return c
			}
		}
		if os.Getenv("CLOCKSYNC_REQUIRE_CHRONY") != "" {
			t.Fatal("chronyd not found, and this run requires it")
		}
		t.Skip("chronyd not installed")
	}
	return p
}

// TestChronydAcceptsOurServer: `chronyd -Q` measures our server and
// reports an offset (exit 0); against an unsynchronised server it never
// gets a usable sample.
func TestChronydAcceptsOurServer(t *testing.T) {
	chrony := chronyd(t)
	addr := startServer(t, "--stratum", "1")
	_, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command(chrony, "-Q", "-t", "10", "-u", "root",
		fmt.Sprintf("server 127.0.0.1 port %s iburst minpoll -2 maxpoll 0", port)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "System clock wrong by") {
		t.Fatalf("chronyd -Q against our server: %v\n%s", err, out)
	}
	t.Logf("chronyd: %s", lineWith(string(out), "System clock wrong by"))

	unsynced := startServer(t)
	_, port, _ = net.SplitHostPort(unsynced)
	out, err = exec.Command(chrony, "-Q", "-t", "3", "-u", "root",
		fmt.Sprintf("server 127.0.0.1 port %s iburst minpoll -2 maxpoll 0", port)).CombinedOutput()
	if err == nil || strings.Contains(string(out), "System clock wrong by") {
		t.Fatalf("chronyd accepted an unsynchronised server:\n%s", out)
	}
}

// TestQueryAgainstChronyd: our client against a local chronyd server
// agrees with beevik/ntp's offset within the measured delay.
func TestQueryAgainstChronyd(t *testing.T) {
	chrony := chronyd(t)
	dir := t.TempDir()
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.LocalAddr().(*net.UDPAddr).Port
	l.Close()
	conf := filepath.Join(dir, "chrony.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf(`port %d
bindaddress 127.0.0.1
allow 127.0.0.1
local stratum 8
cmdport 0
pidfile %s/chronyd.pid
driftfile %s/drift
`, port, dir, dir)), 0o644)
	cmd := exec.Command(chrony, "-x", "-d", "-u", "root", "-f", conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var resp *ntp.Response
	deadline := time.Now().Add(15 * time.Second)
	for {
		if resp, err = ntp.QueryWithOptions(addr, ntp.QueryOptions{Timeout: 200 * time.Millisecond}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chronyd never answered: %v", err)
		}
	}
	out, err := exec.Command(bin, "query", "--json", addr).Output()
	if err != nil {
		t.Fatalf("clocksync query against chronyd: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	res := lines[len(lines)-1]
	if !strings.Contains(res, `"stratum":8`) || !strings.Contains(res, `"leap":0`) {
		t.Fatalf("unexpected result: %s", res)
	}
	var ours, delay float64
	fmt.Sscanf(between(res, `"offset_s":`, ","), "%g", &ours)
	fmt.Sscanf(between(res, `"delay_s":`, ","), "%g", &delay)
	diff := time.Duration(ours*1e9) - resp.ClockOffset
	if diff < 0 {
		diff = -diff
	}
	if limit := time.Duration(delay*1e9) + resp.RTT; diff > limit {
		t.Fatalf("ours %vs vs beevik %v: differ by %v > %v", ours, resp.ClockOffset, diff, limit)
	}
	t.Logf("against chronyd: ours %+.6fs (delay %.6fs), beevik/ntp %v (rtt %v)", ours, delay, resp.ClockOffset, resp.RTT)
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
