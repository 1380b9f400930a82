package main

// Members found by name: elect clusters started with --peers srv:/dns:
// against a DNS server the test runs on loopback and changes as the
// cluster runs.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// startNamed starts member i of a cluster whose files are in dir (stdout
// i.out, truncated; stderr i.log, appended) and stops it when the test
// ends. It returns once the member's --ready-file is written.
func startNamed(t *testing.T, dir string, i int, args ...string) *exec.Cmd {
	t.Helper()
	out, err := os.Create(filepath.Join(dir, fmt.Sprintf("%d.out", i)))
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d.log", i)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, fmt.Sprintf("%d.ready", i))
	os.Remove(ready)
	cmd := exec.Command(electBin, append([]string{"run", "--no-color", "--ready-file", ready}, args...)...)
	cmd.Stdout, cmd.Stderr = out, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); out.Close(); logf.Close(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.log", i)))
			t.Logf("member %d stderr:\n%s", i, b)
		}
	})
	clitest.WaitFor(t, waitLimit, func() bool {
		_, err := os.Stat(ready)
		select {
		case <-exited:
			t.Fatalf("member %d exited before it was ready", i)
		default:
		}
		return err == nil
	})
	return cmd
}

// logged waits until member i's stderr has a line holding every one of
// parts.
func logged(t *testing.T, dir string, i int, parts ...string) {
	t.Helper()
	clitest.WaitFor(t, waitLimit, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.log", i)))
		for _, line := range strings.Split(string(b), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
		return false
	})
}

func freePort(t *testing.T) uint16 {
	t.Helper()
	_, p, _ := net.SplitHostPort(freeAddr(t))
	n, _ := strconv.Atoi(p)
	return uint16(n)
}

// TestPeersBySRV runs three members that find each other through SRV
// records and themselves through --advertise (no --id): they elect 3; a
// member that comes back at another port is followed by the others (it
// hears the leader only if the leader sends to its new address); a member
// whose record is removed is logged as having left, and as back when it
// returns; a record for an ID outside the set and a failed look-up are
// logged; `elect status` finds the members by name too. It runs over UDP
// and over TCP.
func TestPeersBySRV(t *testing.T) {
	for _, tr := range []string{"udp", "tcp"} {
		t.Run(tr, func(t *testing.T) { peersBySRV(t, tr) })
	}
}

func peersBySRV(t *testing.T, tr string) {
	d := clitest.StartDNS(t)
	dir := t.TempDir()
	ports := map[int]uint16{1: freePort(t), 2: freePort(t), 3: freePort(t)}
	srvs := func() []clitest.SRV {
		var s []clitest.SRV
		for i := 1; i <= 3; i++ {
			if p, ok := ports[i]; ok {
				s = append(s, clitest.SRV{Target: fmt.Sprintf("elect-%d.rt.test", i), Port: p})
			}
		}
		return s
	}
	for i := 1; i <= 3; i++ {
		d.SetIP(fmt.Sprintf("elect-%d.rt.test", i), "127.0.0.1")
	}
	d.SetSRV("_elect._udp.rt.test", srvs()...)
	member := func(i int) *exec.Cmd {
		return startNamed(t, dir, i, "--transport", tr, "--peers", "srv:_elect._udp.rt.test.", "--dns-server", d.Addr,
			"--resolve-every", "50ms", "--advertise", fmt.Sprintf("127.0.0.1:%d", ports[i]))
	}
	procs := map[int]*exec.Cmd{}
	for i := 1; i <= 3; i++ {
		procs[i] = member(i)
	}
	c := &cluster{&clitest.Cluster{T: t, Dir: dir, N: 3}, t}
	term := c.waitAgree([]int{1, 2, 3}, 3, 0)

	// Member 2 moves: stopped, its record changed, started at the new port.
	procs[2].Process.Signal(syscall.SIGTERM)
	ports[2] = freePort(t)
	d.SetSRV("_elect._udp.rt.test", srvs()...)
	moved := fmt.Sprintf("127.0.0.1:%d", ports[2])
	logged(t, dir, 3, "member moved", "member=2", moved)
	logged(t, dir, 1, "member moved", "member=2", moved)
	procs[2] = member(2)
	c.waitAgree([]int{1, 2, 3}, 3, term-1)

	// A status command finds the members by name too.
	out, err := exec.Command(electBin, "status", "--transport", tr, "--peers", "srv:_elect._udp.rt.test.", "--dns-server", d.Addr).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "leader 3 term") {
		t.Errorf("status: %v\n%s", err, out)
	}

	// Member 1's record goes.
	delete(ports, 1)
	d.SetSRV("_elect._udp.rt.test", srvs()...)
	logged(t, dir, 2, "record is gone", "member=1")
	logged(t, dir, 3, "record is gone", "member=1")

	// It comes back, and a fourth record appears: not a member.
	ports[1] = freePort(t)
	d.SetIP("elect-4.rt.test", "127.0.0.1")
	d.SetSRV("_elect._udp.rt.test", append(srvs(), clitest.SRV{Target: "elect-4.rt.test", Port: freePort(t)})...)
	logged(t, dir, 3, "record is back", "member=1")
	logged(t, dir, 3, "not a member", "id=4")

	// The name is gone altogether: a failed look-up, the addresses kept.
	d.SetSRV("_elect._udp.rt.test")
	logged(t, dir, 3, "peers not looked up again")
}

// TestPeersByA runs three members on 127.0.0.1-3 found through the A
// records of one name (IDs from the addresses' last bytes): they elect 3.
// Records that give two members one ID are a usage error, a name that does
// not resolve is exit 69.
func TestPeersByA(t *testing.T) {
	d := clitest.StartDNS(t)
	dir := t.TempDir()
	port := clitest.SharedPort(t, 3) // the records carry no port: one for all three
	d.SetIP("rt.test", "127.0.0.1", "127.0.0.2", "127.0.0.3")
	peers := fmt.Sprintf("dns:rt.test.:%d", port)
	for i := 1; i <= 3; i++ {
		startNamed(t, dir, i, "--peers", peers, "--dns-server", d.Addr, "--id", strconv.Itoa(i))
	}
	c := &cluster{&clitest.Cluster{T: t, Dir: dir, N: 3}, t}
	c.waitAgree([]int{1, 2, 3}, 3, 0)

	d.SetIP("clash.test", "127.0.0.1", "127.0.1.1")
	for _, tc := range []struct {
		args []string
		code int
		why  string
	}{
		{[]string{"--peers", fmt.Sprintf("dns:clash.test.:%d", port), "--id", "1"}, cli.ExitUsage, "both give member ID 1"},
		{[]string{"--peers", fmt.Sprintf("dns:none.test.:%d", port), "--id", "1"}, cli.ExitUnavailable, "none.test"},
		{[]string{"--peers", peers, "--advertise", "127.0.0.9:1"}, cli.ExitUsage, "no member's address"},
		{[]string{"--peers", peers, "--id", "2", "--advertise", "127.0.0.1:1"}, cli.ExitUsage, "gives member 2 the address"},
		{[]string{"--peers", peers, "--id", "2", "--resolve-every", "0s"}, cli.ExitUsage, "--resolve-every"},
	} {
		out, err := exec.Command(electBin, append([]string{"run", "--dns-server", d.Addr}, tc.args...)...).CombinedOutput()
		if exitCode(err) != tc.code || !strings.Contains(string(out), tc.why) {
			t.Errorf("%v: exit %d, want %d saying %q:\n%s", tc.args, exitCode(err), tc.code, tc.why, out)
		}
	}
}
