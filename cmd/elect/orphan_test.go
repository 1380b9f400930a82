package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestKilledLeaderLeavesNoJob: a leader's `elect run` killed with SIGKILL
// (`cluster.sh kill`: no handler runs) leaves nothing of its command: its
// watchdog, which no longer dies with it, reads the end of its input and
// ends the command's whole group, background jobs included, with SIGTERM
// at once and SIGKILL by its deadline, the lease's end less the kill slack.
// So the next leader's command, which starts only after that lease, never
// finds the old one's background job running. Pdeathsig alone reached only
// the shell, and took the watchdog with the wrapper.
func TestKilledLeaderLeavesNoJob(t *testing.T) {
	dir := t.TempDir()
	const grace = time.Second
	// Each leader's command first looks for a background job a former
	// leader left running (a live, non-zombie process), then starts its own.
	script := `for f in "$0"/job-?; do [ -e "$f" ] || continue; p=$(cat "$f"); ` +
		`s=$(cut -d" " -f3 "/proc/$p/stat" 2>/dev/null); ` +
		`if [ -n "$s" ] && [ "$s" != Z ]; then echo "member $ELECT_ID found job $p ($f) running" >> "$0/overlap"; fi; done; ` +
		`sleep 60 & echo $! > "$0/job-$ELECT_ID.tmp" && mv "$0/job-$ELECT_ID.tmp" "$0/job-$ELECT_ID"; wait`
	c := startClusterIn(t, dir, 3, "--kill-grace", grace.String(), "--", "sh", "-c", script, dir)
	jobs := func() map[int]int {
		m := map[int]int{}
		for id := 1; id <= 3; id++ {
			if b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("job-%d", id))); err == nil {
				m[id], _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
		}
		return m
	}
	var leader, job int
	clitest.WaitFor(t, waitLimit, func() bool {
		for id, p := range jobs() {
			leader, job = id, p
			return true
		}
		return false
	})
	t.Cleanup(func() {
		for _, p := range jobs() {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	slack := clitest.SpawnCost(electBin)
	c.ctl("kill", strconv.Itoa(leader))
	killed := time.Now()
	// The next leader's command runs (and looked for the old job first).
	clitest.WaitFor(t, waitLimit, func() bool { return len(jobs()) > 1 })
	if b, err := os.ReadFile(filepath.Join(dir, "overlap")); err == nil {
		t.Fatalf("the killed leader %d's background job ran on into the next leader's command: %s", leader, b)
	}
	// And it went within the kill grace (SIGTERM at once ends it) plus a
	// margin of twice the measured start cost.
	clitest.AwaitGone(t, job, killed, grace, slack, electBin, fmt.Sprintf("killed leader %d", leader))
}
