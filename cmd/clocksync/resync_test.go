package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beevik/ntp"
)

// TestServeMaxSkewPollsOften: a server whose virtual clock drifts by 2%
// (--drift-ppm 20000), told to stay within --max-skew 20ms, polls its
// upstream every 20ms/(4 × 2%) = 250ms instead of --poll's 1s (it says so
// on stderr), and once synchronised its clock stays within 20 ms of the
// upstream's (the host clock) for 3 s of queries: 10 ms (δ/2) in the
// worst case that the frequency loop learns nothing, so a 2× margin for
// scheduling.
func TestServeMaxSkewPollsOften(t *testing.T) {
	const maxSkew = 20 * time.Millisecond
	up := startServer(t, "--stratum", "1")
	dir := t.TempDir()
	ready, logf := filepath.Join(dir, "ready"), filepath.Join(dir, "log")
	stderr, err := os.Create(logf)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--bind", "127.0.0.1:0", "--ready-file", ready, "--no-color", "--upstream", up,
		"--max-skew", maxSkew.String(), "--drift-ppm", "20000")
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			addr = strings.TrimSpace(string(b))
		} else if time.Now().After(deadline) {
			t.Fatal("server not ready")
		} else {
			time.Sleep(5 * time.Millisecond) // polling a file the server writes; bounded by the deadline
		}
	}
	// Wait for the first good sample: stratum 2.
	for deadline := time.Now().Add(10 * time.Second); ; {
		r, err := ntp.QueryWithOptions(addr, ntp.QueryOptions{Timeout: time.Second})
		if err == nil && r.Stratum == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not synchronised to the upstream after 10 s: %v %+v", err, r)
		}
		time.Sleep(50 * time.Millisecond) // between queries
	}
	var worst time.Duration
	for i := 0; i < 30; i++ { // 3 s
		r, err := ntp.QueryWithOptions(addr, ntp.QueryOptions{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		off := r.ClockOffset
		if off < 0 {
			off = -off
		}
		// The query's own error is at most half its round trip.
		worst = max(worst, off-r.RTT/2)
		time.Sleep(100 * time.Millisecond) // between queries
	}
	t.Logf("drift 2%%, max-skew %v: worst offset from the upstream over 3 s %v", maxSkew, worst)
	if worst > maxSkew {
		t.Fatalf("the server's clock came %v from its upstream, more than --max-skew %v", worst, maxSkew)
	}
	b, _ := os.ReadFile(logf)
	if !strings.Contains(string(b), "poll=250ms") {
		t.Fatalf("no poll=250ms on stderr:\n%s", b)
	}
}

// TestServeMaxSkewUsage: --max-skew needs --upstream and a positive bound
// the network can keep; otherwise exit 64.
func TestServeMaxSkewUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--max-skew", "10ms"},
		{"--upstream", "127.0.0.1:1", "--max-skew", "0s"},
		{"--upstream", "127.0.0.1:1", "--max-skew", "1us"},
		{"--upstream", "127.0.0.1:1", "--max-skew", "10ms", "--drift-ppm", "5000000"},
	} {
		cmd := exec.Command(bin, append([]string{"serve", "--bind", "127.0.0.1:0", "--no-color"}, args...)...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 64 {
			t.Errorf("serve %v: %v, want exit 64\n%s", args, err, out)
		}
	}
}
