package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// superpeersRun runs `elect superpeers` over n members with args and
// returns each member's superpeer and the superpeer set.
func superpeersRun(t *testing.T, n int, args ...string) (map[int]int, []int) {
	t.Helper()
	dir := t.TempDir()
	var lines []string
	for i := 1; i <= n; i++ {
		lines = append(lines, fmt.Sprintf("%d=127.0.0.1:%d", i, 20000+i))
	}
	peers := filepath.Join(dir, "peers")
	os.WriteFile(peers, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	out, err := exec.Command(electBin, append([]string{"superpeers", "--peers", "@" + peers, "--json"}, args...)...).Output()
	if err != nil {
		t.Fatalf("elect superpeers: %v\n%s", err, out)
	}
	clitest.CheckJSON(t, "elect superpeers", out)
	of := map[int]int{}
	var set []int
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var e struct {
			Event      string `json:"event"`
			ID         int    `json:"id"`
			Superpeer  int    `json:"superpeer"`
			Superpeers []int  `json:"superpeers"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		switch e.Event {
		case "member":
			of[e.ID] = e.Superpeer
		case "superpeers":
			set = e.Superpeers
		}
	}
	return of, set
}

// TestSuperpeersDHT: 500 members, 5%: every member is assigned, its
// superpeer is one, the load bound holds, and two runs agree.
func TestSuperpeersDHT(t *testing.T) {
	of, set := superpeersRun(t, 500, "--fraction", "0.05", "--max-load", "30")
	if len(of) != 500 {
		t.Fatalf("%d members assigned, want 500", len(of))
	}
	load := map[int]int{}
	for m, s := range of {
		if of[s] != s {
			t.Fatalf("member %d's superpeer %d is not a superpeer", m, s)
		}
		if m != s {
			load[s]++
		}
	}
	for s, l := range load {
		if l > 30 {
			t.Fatalf("superpeer %d serves %d, more than --max-load 30", s, l)
		}
	}
	// k = ⌈log2 25⌉ = 5: 32 prefixes, all non-empty with 500 members.
	if len(set) < 32 || len(set) > 40 {
		t.Fatalf("%d superpeers, want 32 (plus a few for the load bound)", len(set))
	}
	again, _ := superpeersRun(t, 500, "--fraction", "0.05", "--max-load", "30")
	for m, s := range of {
		if again[m] != s {
			t.Fatalf("two runs disagree on member %d: %d and %d", m, s, again[m])
		}
	}
	t.Logf("500 members, 5%%, load ≤ 30: %d superpeers", len(set))
}

// TestSuperpeersGeometric: with coordinates (the 'coords' lines of
// clocksync coords --json) members attach to a near superpeer.
func TestSuperpeersGeometric(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := 1; i <= 40; i++ {
		// Two far clusters: 1-20 near (0,0), 21-40 near (100,100).
		x := float64(i % 5)
		if i > 20 {
			x += 100
		}
		lines = append(lines, fmt.Sprintf(`{"event":"coords","id":%d,"algo":"vivaldi","coord":{"vec":[%g,%g],"height":1},"error":0.05}`, i, x, x))
	}
	file := filepath.Join(dir, "coords.jsonl")
	os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	of, set := superpeersRun(t, 40, "--superpeers", "2", "--coords", file)
	if len(set) != 2 || (set[0] <= 20) == (set[1] <= 20) {
		t.Fatalf("superpeers %v: want one in each cluster", set)
	}
	for m, s := range of {
		if (m <= 20) != (s <= 20) {
			t.Fatalf("member %d attached to superpeer %d of the other cluster", m, s)
		}
	}
}

func TestSuperpeersUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"superpeers", "--peers", "1=127.0.0.1:1,2=127.0.0.1:2", "--superpeers", "3"}, "--superpeers must be"},
		{[]string{"superpeers", "--peers", "1=127.0.0.1:1,2=127.0.0.1:2", "--fraction", "2"}, "--fraction"},
		{[]string{"superpeers", "--peers", "1=127.0.0.1:1,2=127.0.0.1:2", "--coords", "/nonexistent"}, "--coords"},
	} {
		out, err := exec.Command(electBin, c.args...).CombinedOutput()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 64 || !strings.Contains(string(out), c.want) {
			t.Errorf("elect %v: exit %d, want 64 with %q:\n%s", c.args, code, c.want, out)
		}
	}
}
