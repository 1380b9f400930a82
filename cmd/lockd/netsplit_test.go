package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// netsplit starts n lockd members, each in a network namespace of its own
// (scripts/netsplit.sh), and removes them when the test ends. It skips the
// test where namespaces cannot be made (not root, no ip or iptables).
func netsplit(t *testing.T, n int, args ...string) (*cluster, func(args ...string)) {
	t.Helper()
	script := clitest.Script(t, "netsplit.sh")
	dir := t.TempDir()
	ctl := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(script, append(args, "-d", dir)...).CombinedOutput(); err != nil {
			t.Fatalf("netsplit.sh %v: %v\n%s", args, err, out)
		}
	}
	up := append([]string{"up", "-n", "3", "-d", dir, lockdBin, "serve", "--no-color", "--socket", filepath.Join(dir, "{id}.sock")}, args...)
	out, err := exec.Command(script, up...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 69 && !strings.Contains(string(out), "not ready") {
		t.Skipf("no network namespaces here: %s", out)
	}
	t.Cleanup(func() { exec.Command(script, "down", "-d", dir).Run() })
	if err != nil {
		t.Fatalf("netsplit.sh up: %v\n%s", err, out)
	}
	c := &cluster{&clitest.Cluster{T: t, Dir: dir, N: n}}
	clitest.WaitFor(t, 20*time.Second, func() bool {
		return exec.Command(lockdBin, "run", "--socket", c.sock(1), "--nonblock", "probe", "--", "true").Run() == nil
	})
	return c, ctl
}

// TestRealPartition: members in their own network namespaces, cut apart
// by iptables. While 3 is cut off from 1 and 2, its holder loses the lock
// (76) before anyone else enters, the majority side grants, and 3's
// clients never enter; after healing 3's clients get in again. A witness
// owned by the test checks that no two holders overlap and that tokens
// grow, for central and voting (the algorithms whose fault model includes
// partitions).
func TestRealPartition(t *testing.T) {
	for _, algo := range []string{"central", "voting"} {
		t.Run(algo, func(t *testing.T) {
			c, ctl := netsplit(t, 3, "--algo", algo)
			file := filepath.Join(c.Dir, "witness")
			holder := c.run(3, file, time.Minute)
			clitest.WaitFor(t, 20*time.Second, func() bool { return len(readWitnessMaybe(file)) > 0 })
			ctl("partition", "1,2/3")
			holder.exits(t, 76, "the holder cut off with a minority")
			c.run(1, file, 50*time.Millisecond, "--timeout", "20s").exits(t, 0, "a client on the majority side")
			c.run(3, file, 50*time.Millisecond, "--timeout", "2s").exits(t, 69, "a client on the minority side")
			ctl("heal")
			c.run(3, file, 50*time.Millisecond, "--timeout", "20s").exits(t, 0, "a client of member 3 after healing")
			if n := checkWitness(t, file); n != 3 {
				t.Fatalf("%d critical sections, want 3", n)
			}
		})
	}
}
