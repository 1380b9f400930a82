package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestSimPrCastCommand: `ticketd sim --prcast` as docs/ticketd.md shows it
// ("PrCast over partial views"): a text report of the messages per member
// and round, one JSON object with --json that the same seed reproduces,
// and exit 64 for what it refuses.
func TestSimPrCastCommand(t *testing.T) {
	args := []string{"--prcast", "--processes", "60", "--prcast-rounds", "4", "--seed", "2"}
	code, out, stderr := simRun(t, args...)
	if code != 0 || !strings.Contains(out, "per member and round: membership") || !strings.Contains(out, "view 13") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	var a, b map[string]any
	for _, v := range []*map[string]any{&a, &b} {
		code, out, stderr = simRun(t, append(args, "--json")...)
		if code != 0 || strings.Count(out, "\n") != 1 {
			t.Fatalf("--json: exit %d, want one line\n%s%s", code, out, stderr)
		}
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatal(err)
		}
		clitest.CheckJSON(t, "ticketd sim", []byte(out))
		delete(*v, "elapsed_ns")
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) || a["membership_per_member_round"] == nil || a["reached"] != 1.0 {
		t.Fatalf("seed 2 twice:\n%s\n%s", ja, jb)
	}
	code, out, _ = simRun(t, "--prcast", "--processes", "60", "--prcast-rounds", "4", "--view", "20")
	if code != 0 || !strings.Contains(out, "view 20") {
		t.Fatalf("--view 20: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{{"--processes", "1"}, {"--view", "0"}, {"--view", "300"}, {"--prcast-rounds", "0"}, {"--round", "1ms"}} {
		if code, _, stderr := simRun(t, append([]string{"--prcast"}, bad...)...); code != 64 || stderr == "" {
			t.Errorf("sim --prcast %v: exit %d, want 64 with a message\n%s", bad, code, stderr)
		}
	}
}
