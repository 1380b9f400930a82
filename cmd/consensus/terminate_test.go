package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// syncBuf is a stdout both the process and the test touch.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestTerminateHolderKilled: four processes of a job; process 1 sends work
// to 2 and stays active, so it keeps the marker; 2, 3 and 4 go passive.
// No one may announce the end while 1 is active. Then 1 is SIGKILLed: its
// backup (2) takes the marker over, and 2, 3 and 4 announce termination
// with 1 crashed, and exit 0.
func TestTerminateHolderKilled(t *testing.T) {
	const n = 4
	var peers []string
	for i := 1; i <= n; i++ {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, fmt.Sprintf("%d=%s", i, c.LocalAddr()))
		c.Close()
	}
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, n+1)
	ins := make([]io.WriteCloser, n+1)
	outs := make([]*syncBuf, n+1)
	for i := 1; i <= n; i++ {
		ready := filepath.Join(dir, fmt.Sprintf("%d.ready", i))
		cmd := exec.Command(bin, "terminate", "--id", fmt.Sprint(i), "--peers", strings.Join(peers, ","),
			"--backups", "1", "--ready-file", ready, "--no-color")
		outs[i] = &syncBuf{}
		cmd.Stdout = outs[i]
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i], ins[i] = cmd, in
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	for i := 1; i <= n; i++ {
		ready := filepath.Join(dir, fmt.Sprintf("%d.ready", i))
		clitest.WaitFor(t, 15*time.Second, func() bool { _, err := os.Stat(ready); return err == nil })
	}
	io.WriteString(ins[1], "send 2\n")
	clitest.WaitFor(t, 15*time.Second, func() bool { return strings.Contains(outs[2].String(), "work from 1") })
	for i := 2; i <= n; i++ {
		io.WriteString(ins[i], "idle\n")
	}
	// Process 2 acknowledged the work and is passive; 1 holds the marker
	// while it is active.
	for i := 2; i <= n; i++ {
		if strings.Contains(outs[i].String(), "terminated") {
			t.Fatalf("process %d announced termination while process 1 is active: %q", i, outs[i].String())
		}
	}
	cmds[1].Process.Signal(syscall.SIGKILL)
	for i := 2; i <= n; i++ {
		done := make(chan error, 1)
		go func() { done <- cmds[i].Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("process %d: %v\n%s", i, err, outs[i].String())
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("process %d did not end within 15 s after the holder was killed: %q", i, outs[i].String())
		}
		if !strings.Contains(outs[i].String(), "terminated (crashed [1])") {
			t.Errorf("process %d printed %q, want 'terminated (crashed [1])'", i, outs[i].String())
		}
	}
}

// TestTerminateLossy: four processes whose every outgoing datagram is
// dropped with probability 0.2 (--fault-drop) and duplicated with 0.1
// (--fault-dup). Each sends work to the next and goes passive; work, the
// marker and the announcement are resent until acknowledged and a
// duplicate is work once, so every process prints one 'work from' and
// 'terminated' and exits 0.
func TestTerminateLossy(t *testing.T) {
	const n = 4
	var peers []string
	for i := 1; i <= n; i++ {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, fmt.Sprintf("%d=%s", i, c.LocalAddr()))
		c.Close()
	}
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, n+1)
	ins := make([]io.WriteCloser, n+1)
	outs := make([]*syncBuf, n+1)
	for i := 1; i <= n; i++ {
		ready := filepath.Join(dir, fmt.Sprintf("%d.ready", i))
		// A timeout of 40 heartbeats: 0.36^40 (a round trip fails with
		// probability 1-0.8²) makes a false crash negligible.
		cmd := exec.Command(bin, "terminate", "--id", fmt.Sprint(i), "--peers", strings.Join(peers, ","),
			"--backups", "1", "--heartbeat", "25ms", "--timeout", "1s", "--fault-drop", "0.2", "--fault-dup", "0.1",
			"--ready-file", ready, "--no-color")
		outs[i] = &syncBuf{}
		cmd.Stdout = outs[i]
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i], ins[i] = cmd, in
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	for i := 1; i <= n; i++ {
		ready := filepath.Join(dir, fmt.Sprintf("%d.ready", i))
		clitest.WaitFor(t, 15*time.Second, func() bool { _, err := os.Stat(ready); return err == nil })
	}
	for i := 1; i <= n; i++ {
		fmt.Fprintf(ins[i], "send %d\n", i%n+1)
	}
	for i := 1; i <= n; i++ {
		from := fmt.Sprintf("work from %d", (i+n-2)%n+1)
		clitest.WaitFor(t, 15*time.Second, func() bool { return strings.Contains(outs[i].String(), from) })
	}
	for i := 1; i <= n; i++ {
		ins[i].Close()
	}
	for i := 1; i <= n; i++ {
		done := make(chan error, 1)
		go func() { done <- cmds[i].Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("process %d: %v\n%s", i, err, outs[i].String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("process %d did not end within 30 s at 20%% loss: %q", i, outs[i].String())
		}
		if got := outs[i].String(); !strings.Contains(got, "terminated (crashed [])") || strings.Count(got, "work from") != 1 {
			t.Errorf("process %d printed %q, want one 'work from' and 'terminated (crashed [])'", i, got)
		}
	}
}

func TestTerminateUsage(t *testing.T) {
	for _, args := range [][]string{
		{"terminate", "--id", "1", "--peers", "1=127.0.0.1:7001,2=127.0.0.1:7002", "--backups", "-1"},
		{"terminate", "--id", "1", "--peers", "1=127.0.0.1:7001,2=127.0.0.1:7002", "--backups", "2"},
		{"terminate", "--id", "1", "--peers", "1=127.0.0.1:7001", "--timeout", "10ms"},
		{"terminate", "--id", "1", "--peers", "1=127.0.0.1:7001", "extra"},
	} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 64 || len(bytes.TrimSpace(out)) == 0 {
			t.Errorf("consensus %v: exit %d, want 64 with a message\n%s", args, code, out)
		}
	}
	// A line the job should not write.
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := c.LocalAddr().String()
	c.Close()
	cmd := exec.Command(bin, "terminate", "--id", "1", "--peers", "1="+addr+",2=127.0.0.1:9")
	cmd.Stdin = strings.NewReader("jump 2\n")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 64 || !strings.Contains(string(out), "jump") {
		t.Errorf("a bad stdin line: %v\n%s", err, out)
	}
}
