package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestPeersByName runs three daemons on 127.0.0.1-3 that find each other
// through the A records of one name (docs/design.md, "Peers by name") and
// grants a lock through each of them.
func TestPeersByName(t *testing.T) {
	d := clitest.StartDNS(t)
	dir := t.TempDir()
	port := clitest.SharedPort(t, 3)
	d.SetIP("lockd.rt.test", "127.0.0.1", "127.0.0.2", "127.0.0.3")
	sock := func(i int) string { return filepath.Join(dir, fmt.Sprintf("%d.sock", i)) }
	for i := 1; i <= 3; i++ {
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(lockdBin, "serve", "--no-color", "--id", strconv.Itoa(i), "--socket", sock(i),
			"--peers", fmt.Sprintf("dns:lockd.rt.test.:%d", port), "--dns-server", d.Addr)
		cmd.Stderr = logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			logf.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logf.Name())
				t.Logf("daemon %d:\n%s", i, b)
			}
		})
	}
	clitest.WaitFor(t, 20*time.Second, func() bool {
		return exec.Command(lockdBin, "run", "--socket", sock(1), "--nonblock", "probe", "--", "true").Run() == nil
	})
	for i := 1; i <= 3; i++ {
		if out, err := exec.Command(lockdBin, "run", "--socket", sock(i), "--timeout", "10s", "L", "--", "true").CombinedOutput(); err != nil {
			t.Errorf("lockd run through daemon %d: %v\n%s", i, err, out)
		}
	}
}
