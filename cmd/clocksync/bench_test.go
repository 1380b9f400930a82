package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/beevik/ntp"
)

// BenchmarkAgainstChronyd (scripts/bench-clocksync.sh) queries our server
// and a local chronyd, each --n times, with github.com/beevik/ntp, and
// reports the median round trip and offset of each and their ratio; then
// the server's throughput in queries per second.
func BenchmarkAgainstChronyd(b *testing.B) {
	chrony := chronydPath(b)
	ours := startServerB(b, "--stratum", "1")
	theirs := startChronyd(b, chrony)
	const n = 200
	stats := func(addr string) (rtt, off time.Duration) {
		var rtts, offs []time.Duration
		for i := 0; i < n; i++ {
			r, err := ntp.QueryWithOptions(addr, ntp.QueryOptions{Timeout: time.Second})
			if err != nil {
				continue
			}
			rtts, offs = append(rtts, r.RTT), append(offs, r.ClockOffset)
		}
		if len(rtts) == 0 {
			b.Fatalf("%s never answered", addr)
		}
		slices.Sort(rtts)
		slices.Sort(offs)
		return rtts[len(rtts)/2], offs[len(offs)/2]
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		oRTT, oOff := stats(ours)
		cRTT, cOff := stats(theirs)
		fmt.Printf("clocksync: median rtt %v, median offset %v (%d queries)\n", oRTT, oOff, n)
		fmt.Printf("chronyd  : median rtt %v, median offset %v (%d queries)\n", cRTT, cOff, n)
		fmt.Printf("ratio rtt clocksync/chronyd: %.2f (target ≤ 1.5); |offset median| %v (target ≤ 20µs)\n",
			float64(oRTT)/float64(cRTT), abs(oOff))
		for _, srv := range []struct{ name, addr string }{{"clocksync", ours}, {"chronyd", theirs}} {
			fmt.Printf("%-9s: %.0f queries/s (one client, sequential, 1 s)\n", srv.name, throughput(b, srv.addr))
		}
	}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// throughput: sequential request/answer pairs on one socket for a second.
func throughput(b *testing.B, addr string) float64 {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, 512)
	count := 0
	end := time.Now().Add(time.Second)
	for time.Now().Before(end) {
		req := make([]byte, 48)
		req[0] = 4<<3 | 3
		copy(req[40:], []byte{1, 2, 3, 4, 5, 6, 7, byte(count)})
		conn.Write(req)
		conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := conn.Read(buf); err == nil {
			count++
		}
	}
	return float64(count)
}

// BenchmarkConvergence: a server started +250 ms ahead with 200 ppm drift,
// polling a stratum-1 server every second (the default), is timed until it
// is within 1 ms of its upstream.
func BenchmarkConvergence(b *testing.B) {
	up := startServerB(b, "--stratum", "1")
	for i := 0; i < b.N; i++ {
		start := time.Now()
		node := startServerB(b, "--upstream", up, "--skew", "250ms", "--drift-ppm", "200")
		for {
			r, err := ntp.QueryWithOptions(node, ntp.QueryOptions{Timeout: time.Second})
			if err == nil && r.Stratum == 2 && abs(r.ClockOffset) < time.Millisecond {
				fmt.Printf("convergence: +250ms/200ppm node within %v of its upstream after %v (target ≤ 30s)\n",
					r.ClockOffset, time.Since(start).Round(100*time.Millisecond))
				break
			}
			if time.Since(start) > 60*time.Second {
				b.Fatal("no convergence within 60s")
			}
			time.Sleep(100 * time.Millisecond) // polling the node's state
		}
	}
}

func chronydPath(b *testing.B) string {
	for _, c := range []string{"chronyd", "/usr/sbin/chronyd"} {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	b.Skip("chronyd not installed")
	return ""
}

func startServerB(b *testing.B, args ...string) string {
	ready := filepath.Join(b.TempDir(), "ready")
	cmd := exec.Command(bin, append([]string{"serve", "--bind", "127.0.0.1:0", "--ready-file", ready, "--log-level", "error"}, args...)...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if d, err := os.ReadFile(ready); err == nil && len(d) > 0 {
			return string(d[:len(d)-1])
		}
		if time.Now().After(deadline) {
			b.Fatal("server not ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func startChronyd(b *testing.B, chrony string) string {
	dir := b.TempDir()
	l, _ := net.ListenPacket("udp", "127.0.0.1:0")
	port := l.LocalAddr().(*net.UDPAddr).Port
	l.Close()
	conf := filepath.Join(dir, "chrony.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf("port %d\nbindaddress 127.0.0.1\nallow 127.0.0.1\nlocal stratum 8\ncmdport 0\npidfile %s/pid\ndriftfile %s/drift\n", port, dir, dir)), 0o644)
	cmd := exec.Command(chrony, "-x", "-d", "-u", "root", "-f", conf)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(15 * time.Second); ; {
		if _, err := ntp.QueryWithOptions(addr, ntp.QueryOptions{Timeout: 200 * time.Millisecond}); err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			b.Fatal("chronyd never answered")
		}
	}
}
