package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// TestFloodNineMembers: nine members of a total-order group (ISIS and
// TOTEM) each pipe 1,500 numbered lines through 'mcast run' under 1% loss
// and leave at the end of their input. Then 'mcast check' judges the
// logs, and the per-sender sequence check of 'mcast bench' runs over
// them: at every member each sender's lines come numbered 1, 2, 3 ...
// with no hole, except where the member itself says it was removed from
// the group (it missed the views it was not in); a member exits 0, or 76
// saying which of its messages the others may lack ('lost' line) or
// which messages of its view it missed ('missed' line).
func TestFloodNineMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("nine-member flood")
	}
	for _, total := range []string{"isis", "totem"} {
		t.Run(total, func(t *testing.T) {
			ms := startGroup(t, 9, "--order", "total", "--total", total, "--fault-drop", "0.01", "--linger", "60s")
			dumpOnFailure(t, ms)
			for _, m := range ms {
				go func() {
					w := bufio.NewWriter(m.stdin)
					for k := 1; k <= 1500; k++ {
						fmt.Fprintf(w, "%d %d\n", m.id, k)
					}
					w.Flush()
					m.stdin.Close()
				}()
			}
			for _, m := range ms {
				select {
				case err := <-m.done:
					var ee *exec.ExitError
					if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == cli.ExitLost) {
						t.Fatalf("member %d: %v", m.id, err)
					}
					if log := readFile(m.log); err != nil && !strings.Contains(log, `"event":"lost"`) && !strings.Contains(log, `"event":"missed"`) {
						t.Errorf("member %d exited %v without a 'lost' or 'missed' line", m.id, err)
					}
				case <-time.After(150 * time.Second):
					t.Fatalf("member %d did not finish within 150 s", m.id)
				}
			}
			t.Log(checkLogs(t, "total", ms))
			for _, m := range ms {
				if err := senderSequences(m.log); err != nil {
					t.Errorf("member %d: %v", m.id, err)
				}
			}
		})
	}
}

func readFile(name string) string {
	b, _ := os.ReadFile(name)
	return string(b)
}

// senderSequences is mcast bench's sequence check over a --json log of
// lines '<sender> <k>': each sender's k go 1, 2, 3 ... at this member,
// a hole excused only after the member's 'removed' line.
func senderSequences(log string) error {
	next := map[int]int{}
	removed := false
	for _, l := range strings.Split(readFile(log), "\n") {
		var d struct {
			Event   string `json:"event"`
			Payload string `json:"payload"`
		}
		if json.Unmarshal([]byte(l), &d) != nil {
			continue
		}
		switch d.Event {
		case "removed":
			removed = true
		case "deliver":
			var s, k int
			if _, err := fmt.Sscanf(d.Payload, "%d %d", &s, &k); err != nil {
				return fmt.Errorf("payload %q", d.Payload)
			}
			if k != next[s]+1 && !(removed && k > next[s]) {
				return fmt.Errorf("line %d of member %d after %d", k, s, next[s])
			}
			next[s] = max(next[s], k)
		}
	}
	return nil
}
