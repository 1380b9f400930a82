package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestJoinByName: `serve --join dns:NAME:PORT` and `--join srv:NAME` find
// the pool through a DNS server the test runs on loopback (docs/ticketd.md,
// "Joining by name"): the name's addresses include ones where nobody
// answers, and the joiner asks until the live one does. A malformed name is
// exit 64; a name that does not resolve is 69.
func TestJoinByName(t *testing.T) {
	c := startPool(t, 1, 3)
	addr := strings.TrimSpace(strings.SplitN(readFile(t, filepath.Join(c.Dir, "peers")), "=", 2)[1])
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	d := clitest.StartDNS(t)
	// 127.0.0.1 is the pool's member; nothing of the pool listens on
	// 127.0.0.2 or .3.
	d.SetIP("pool.rt.test", "127.0.0.2", "127.0.0.1")
	d.SetIP("t1.rt.test", "127.0.0.1")
	d.SetIP("t3.rt.test", "127.0.0.3")
	var p uint16
	for _, ch := range port {
		p = 10*p + uint16(ch-'0')
	}
	d.SetSRV("_ticketd._udp.rt.test", clitest.SRV{Target: "t3.rt.test", Port: p}, clitest.SRV{Target: "gone.rt.test", Port: p},
		clitest.SRV{Target: "t1.rt.test", Port: p})
	for i, join := range []string{"dns:pool.rt.test.:" + port, "srv:_ticketd._udp.rt.test."} {
		dir := t.TempDir()
		ready := filepath.Join(dir, "ready")
		sock := filepath.Join(dir, "s")
		cmd := exec.Command(ticketdBin, "serve", "--no-color", "--id", []string{"7", "8"}[i], "--bind", "127.0.0.1:0", "--join", join,
			"--dns-server", d.Addr, "--socket", sock, "--ready-file", ready)
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+dir)
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		deadline := time.After(20 * time.Second)
		for joined := false; !joined; {
			select {
			case err := <-done:
				t.Fatalf("--join %s: exited (%v) before it joined\n%s", join, err, errb.String())
			case <-deadline:
				cmd.Process.Kill()
				<-done
				t.Fatalf("--join %s: not ready in 20 s\n%s", join, errb.String())
			case <-time.After(50 * time.Millisecond):
				_, err := os.Stat(ready)
				joined = err == nil
			}
		}
		out, err := exec.Command(ticketdBin, "status", "--socket", sock).Output()
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if err != nil || !strings.Contains(string(out), "tickets 3") {
			t.Fatalf("--join %s: status after joining (%v):\n%s\n%s", join, err, out, errb.String())
		}
	}
	dir := t.TempDir()
	for _, bad := range []struct {
		join string
		code int
	}{{"dns:pool.rt.test", 64}, {"srv:", 64}, {"dns:pool.rt.test.:0", 64}, {"dns:nosuch.rt.test.:7300", 69}, {"srv:_none._udp.rt.test.", 69}} {
		code, stderr := serveExit(t, "--id", "9", "--bind", "127.0.0.1:0", "--join", bad.join, "--dns-server", d.Addr, "--socket", filepath.Join(dir, "s"))
		if code != bad.code || !strings.Contains(stderr, "--join") {
			t.Errorf("--join %s: exit %d, want %d with a message naming --join\n%s", bad.join, code, bad.code, stderr)
		}
	}
}
