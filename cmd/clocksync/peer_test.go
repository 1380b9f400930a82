package main

import (
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/beevik/ntp"
)

// freeUDP is a loopback address no one listens on (for two servers that
// must know each other's address before either starts).
func freeUDP(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// TestSymmetricPeers: two servers of equal role peer with each other. A
// declares stratum 1 with a correct clock; B declares stratum 3 with a
// clock 300 ms ahead. By the stratum rule, B adjusts to A (A's stratum is
// lower) and serves at stratum 2 within a few milliseconds of the host's
// clock; A never adjusts to B: it stays at stratum 1 with reference LOCL,
// and its clock stays on the host's.
func TestSymmetricPeers(t *testing.T) {
	a, b := freeUDP(t), freeUDP(t)
	startPeer := func(bind, peer string, args ...string) {
		startServer(t, append([]string{"--bind", bind, "--peer", peer, "--poll", "100ms"}, args...)...)
	}
	startPeer(a, b, "--stratum", "1")
	startPeer(b, a, "--stratum", "3", "--skew", "300ms")
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	for {
		rb, errB := ntp.QueryWithOptions(b, ntp.QueryOptions{Timeout: time.Second})
		if errB == nil && rb.Stratum == 2 && rb.Validate() == nil && rb.ClockOffset.Abs() < 2*time.Millisecond {
			t.Logf("B adjusted to A: stratum 2, offset %v, %v after start", rb.ClockOffset, time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B did not adjust to A within 30 s: %+v %v", rb, errB)
		}
		time.Sleep(50 * time.Millisecond) // polling a remote clock's state; the deadline above is the failure bound
	}
	// A has polled B at stratum 2 many times by now and must not follow it.
	for range 5 {
		ra, err := ntp.QueryWithOptions(a, ntp.QueryOptions{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if ra.Stratum != 1 || ra.ReferenceString() != ".LOCL." || ra.ClockOffset.Abs() > 2*time.Millisecond {
			t.Fatalf("A changed: stratum %d ref %s offset %v; want stratum 1 .LOCL. on the host's clock", ra.Stratum, ra.ReferenceString(), ra.ClockOffset)
		}
		time.Sleep(100 * time.Millisecond) // one poll between checks; the check itself reads A's state
	}
}

func TestPeerUsage(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--bind", "127.0.0.1:0", "--peer", "127.0.0.1:9", "--upstream", "127.0.0.1:9"},
	} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 64 {
			t.Errorf("clocksync %v: %v, want exit 64\n%s", args, err, out)
		}
	}
}
