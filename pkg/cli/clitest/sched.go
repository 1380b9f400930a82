package clitest

import (
	"os/exec"
	"strconv"
	"testing"
)

// SchedPolicy is chrt(1)'s answer for process pid ("pid N's current
// scheduling policy: SCHED_RR|SCHED_RESET_ON_FORK ... priority: 1"); a
// test skips when chrt (util-linux) is not installed.
func SchedPolicy(t testing.TB, pid int) string {
	t.Helper()
	chrt, err := exec.LookPath("chrt")
	if err != nil {
		t.Skip("chrt (util-linux) not installed")
	}
	out, err := exec.Command(chrt, "-p", strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		t.Fatalf("chrt -p %d: %v\n%s", pid, err, out)
	}
	return string(out)
}
