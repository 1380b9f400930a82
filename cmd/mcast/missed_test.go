package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// logRec is what the missed-message test reads of a --json line.
type logRec struct {
	Event  string   `json:"event"`
	View   uint64   `json:"view"`
	Sender int      `json:"sender"`
	Seq    uint64   `json:"seq"`
	Seqs   []uint64 `json:"seqs"`
}

func readRecs(t *testing.T, m *member) []logRec {
	t.Helper()
	var out []logRec
	for _, l := range strings.Split(readFile(m.log), "\n") {
		var r logRec
		if json.Unmarshal([]byte(l), &r) == nil && r.Event != "" {
			out = append(out, r)
		}
	}
	return out
}

type msgID struct {
	sender int
	view   uint64
	seq    uint64
}

// TestGroupPausedMemberReportsMissed: what a script sees of a member
// that misses messages of its view. Member 3 of four (total order) is
// SIGSTOPped, the others send 40 lines of 30 kB each at once (more than
// its socket buffer keeps for it), in the view that still holds member
// 3, and go on without it. After SIGCONT member 3
// prints 'removed', then a 'missed' line per sender naming exactly the
// messages of that view that member 1 delivered and it did not, says so
// on stderr, joins again, and at the end exits 76 while the others exit
// 0; 'mcast check' passes.
func TestGroupPausedMemberReportsMissed(t *testing.T) {
	ms := startGroup(t, 4, "--order", "total", "--fault-delay", "1ms")
	dumpOnFailure(t, ms)
	inView(t, ms, []int{1, 2, 3, 4}, 30*time.Second)
	for _, m := range ms {
		m.write(t, 1, 20)
	}
	stopped := ms[2]
	clitest.WaitFor(t, 30*time.Second, func() bool {
		return strings.Count(readFile(stopped.log), `"event":"deliver"`) >= 80
	})
	stopped.cmd.Process.Signal(syscall.SIGSTOP)
	rest := without(ms, stopped.id)
	// More than member 3's socket buffer (1 MiB) holds: read after
	// SIGCONT, what it holds would be delivered in the old view.
	pad := strings.Repeat("x", 30000)
	for _, m := range rest {
		for k := 21; k <= 60; k++ {
			if _, err := fmt.Fprintf(m.stdin, "line %d of member %d %s\n", k, m.id, pad); err != nil {
				t.Fatal(err)
			}
		}
	}
	inView(t, rest, []int{1, 2, 4}, 30*time.Second)
	stopped.cmd.Process.Signal(syscall.SIGCONT)
	inView(t, ms, []int{1, 2, 3, 4}, 30*time.Second)
	for _, m := range ms {
		m.stdin.Close()
	}
	for _, m := range rest {
		m.wait(t)
	}
	var exit error
	select {
	case exit = <-stopped.done:
	case <-time.After(90 * time.Second):
		t.Fatal("the stopped member did not finish within 90 s")
	}
	// Its last view before 'removed', what it delivered there, and what
	// it reported missed.
	var last uint64
	got, reported := map[msgID]bool{}, map[msgID]bool{}
	removed := false
	for _, r := range readRecs(t, stopped) {
		switch {
		case r.Event == "view" && !removed:
			last = r.View
		case r.Event == "deliver" && !removed:
			got[msgID{r.Sender, r.View, r.Seq}] = true
		case r.Event == "removed":
			removed = true
		case r.Event == "missed":
			for _, q := range r.Seqs {
				reported[msgID{r.Sender, r.View, q}] = true
			}
		}
	}
	if !removed {
		t.Fatal("the stopped member never said it was removed")
	}
	holes := map[msgID]bool{}
	for _, r := range readRecs(t, ms[0]) {
		if id := (msgID{r.Sender, r.View, r.Seq}); r.Event == "deliver" && r.View == last && !got[id] {
			holes[id] = true
		}
	}
	{
		for _, m := range ms {
			n := map[uint64]int{}
			for _, r := range readRecs(t, m) {
				if r.Event == "deliver" {
					n[r.View]++
				}
			}
			t.Logf("member %d deliveries by view: %v", m.id, n)
		}
	}
	if len(holes) == 0 {
		t.Fatalf("member 3 missed nothing of view %d: the test shows nothing", last)
	}
	if len(holes) != len(reported) {
		t.Errorf("member 3 missed %d messages of view %d, reported %d", len(holes), last, len(reported))
	}
	for id := range holes {
		if !reported[id] {
			t.Errorf("member 3 missed %+v without reporting it", id)
		}
	}
	var ee *exec.ExitError
	if !errors.As(exit, &ee) || ee.ExitCode() != cli.ExitLost {
		t.Errorf("the member that missed messages exited %v, want %d", exit, cli.ExitLost)
	}
	stderr, _ := os.ReadFile(strings.TrimSuffix(stopped.log, ".log") + ".err")
	if !strings.Contains(string(stderr), "missed") {
		t.Errorf("nothing on stderr says what was missed:\n%s", stderr)
	}
	t.Logf("member 3 missed %d messages of view %d and said so; %s", len(holes), last, checkLogs(t, "total", ms))
	for _, m := range ms {
		clitest.CheckJSON(t, "mcast", []byte(readFile(m.log)))
	}
}
