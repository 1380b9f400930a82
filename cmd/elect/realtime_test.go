package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestRealtime: `elect run` runs under SCHED_RR|SCHED_RESET_ON_FORK at
// priority 1 by default (--realtime, pkg/cli sched.go), as `chrt -p`
// shows, while its command runs as a normal SCHED_OTHER process; with
// --realtime=false elect stays SCHED_OTHER too. Without the privilege
// (not root, no CAP_SYS_NICE, RLIMIT_RTPRIO 0) elect says so on stderr and
// runs normally: the test checks that line and skips the rest.
func TestRealtime(t *testing.T) {
	policy := func(pid string) string {
		t.Helper()
		n, err := strconv.Atoi(pid)
		if err != nil {
			t.Fatalf("pid %q: %v", pid, err)
		}
		return clitest.SchedPolicy(t, n)
	}
	all := []int{1, 2, 3}
	for _, on := range []bool{true, false} {
		dir := t.TempDir()
		child := `echo $$ > "$0/child-$ELECT_ID.tmp" && mv "$0/child-$ELECT_ID.tmp" "$0/child-$ELECT_ID"; exec sleep 600`
		args := []string{"--", "sh", "-c", child, dir}
		if !on {
			args = append([]string{"--realtime=false"}, args...)
		}
		c := startClusterIn(t, dir, 3, args...)
		c.restartLosers(all, 3)
		c.waitAgree(all, 3, 0)
		kid := c.waitFile("child-3")
		pid, err := os.ReadFile(c.File(3, "pid"))
		if err != nil {
			t.Fatal(err)
		}
		member := policy(strings.TrimSpace(string(pid)))
		log, _ := os.ReadFile(c.File(3, "log"))
		switch {
		case on && strings.Contains(string(log), "realtime scheduling is off"):
			t.Skipf("realtime scheduling not permitted here; elect said so: %s", log)
		case on && (!strings.Contains(member, "SCHED_RR|SCHED_RESET_ON_FORK") || !strings.Contains(member, "priority: 1")):
			t.Errorf("elect run (--realtime by default): %s", member)
		case !on && !strings.Contains(member, "SCHED_OTHER"):
			t.Errorf("elect run --realtime=false: %s", member)
		}
		if p := policy(kid); !strings.Contains(p, "SCHED_OTHER") {
			t.Errorf("the command of elect run (realtime %v): %s", on, p)
		}
		c.ctl("stop")
	}
}
