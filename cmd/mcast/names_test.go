package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestPeersByNameRecordGone: three members on 127.0.0.1-3 find each other
// through the A records of one name (--order total: with views). When
// member 3's record disappears it has left: 1 and 2 install a view
// without it, although it still runs; when the record returns, the three
// merge again.
func TestPeersByNameRecordGone(t *testing.T) {
	d := clitest.StartDNS(t)
	dir := t.TempDir()
	port := clitest.SharedPort(t, 3)
	all := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}
	d.SetIP("mcast.rt.test", all...)
	var ms []*member
	for i := 1; i <= 3; i++ {
		m := &member{id: i, log: filepath.Join(dir, fmt.Sprintf("%d.log", i)), done: make(chan error, 1)}
		out, err := os.Create(m.log)
		if err != nil {
			t.Fatal(err)
		}
		stderr, _ := os.Create(filepath.Join(dir, fmt.Sprintf("%d.err", i)))
		m.cmd = exec.Command(mcastBin, "run", "--id", fmt.Sprint(i), "--order", "total", "--json", "--no-color",
			"--peers", fmt.Sprintf("dns:mcast.rt.test.:%d", port), "--dns-server", d.Addr, "--resolve-every", "100ms")
		m.cmd.Stdout, m.cmd.Stderr = out, stderr
		m.stdin, _ = m.cmd.StdinPipe()
		if err := m.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { m.done <- m.cmd.Wait(); out.Close(); stderr.Close() }()
		t.Cleanup(func() {
			m.cmd.Process.Kill()
			<-m.done
			if t.Failed() {
				b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.err", m.id)))
				t.Logf("member %d stderr:\n%s", m.id, b)
			}
		})
		ms = append(ms, m)
	}
	dumpOnFailure(t, ms)
	inView(t, ms, []int{1, 2, 3}, 30*time.Second)
	d.SetIP("mcast.rt.test", all[:2]...)
	inView(t, ms[:2], []int{1, 2}, 30*time.Second)
	select {
	case err := <-ms[2].done:
		t.Fatalf("member 3 exited (%v); it should run on, cut off", err)
	default:
	}
	d.SetIP("mcast.rt.test", all...)
	inView(t, ms, []int{1, 2, 3}, 30*time.Second)
}
