package main

// Multi-process tests: real consensus binaries on loopback.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

var bin string

func TestMain(m *testing.M) { clitest.Main(m, "consensus", &bin) }

type result struct {
	out  map[string]any
	code int
	log  string
}

// cluster starts one process per entry of args (member i+1 gets args[i]
// in addition to the common flags) and waits for all of them to exit.
func cluster(t *testing.T, common []string, args [][]string) []result {
	t.Helper()
	// Round 1 starts when every process is surely up; the first message
	// seen would also start the latecomers.
	start := time.Now().Add(700 * time.Millisecond).Format(time.RFC3339Nano)
	return clusterStarted(t, append([]string{"--start-at", start}, common...), args, 0)
}

// clusterStarted is cluster without --start-at of its own: the common
// flags say how round 1 starts, and member 1 is started early by the
// given head start (0: none). A nil entry of args is a member in the peer
// list that is never started (its result is empty).
func clusterStarted(t *testing.T, common []string, args [][]string, head time.Duration) []result {
	t.Helper()
	var peers []string
	for i := range args {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, fmt.Sprintf("%d=%s", i+1, c.LocalAddr()))
		c.Close()
	}
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for i, a := range args {
		if i == 1 && head > 0 {
			time.Sleep(head) // the head start is the scenario itself, not a wait for an event
		}
		if a == nil {
			cmds = append(cmds, nil)
			continue
		}
		full := append([]string{"run", "--id", fmt.Sprint(i + 1), "--peers", strings.Join(peers, ","),
			"--json", "--no-color"}, common...)
		cmd := exec.Command(bin, append(full, a...)...)
		cmd.Stdout, _ = os.Create(filepath.Join(dir, fmt.Sprintf("%d.out", i+1)))
		cmd.Stderr, _ = os.Create(filepath.Join(dir, fmt.Sprintf("%d.log", i+1)))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	res := make([]result, len(cmds))
	deadline := time.AfterFunc(30*time.Second, func() {
		for _, c := range cmds {
			if c != nil {
				c.Process.Kill()
			}
		}
	})
	defer deadline.Stop()
	for i, c := range cmds {
		if c == nil {
			continue
		}
		err := c.Wait()
		res[i].code = c.ProcessState.ExitCode()
		if ee, ok := err.(*exec.ExitError); ok && ee.ProcessState.ExitCode() == -1 {
			res[i].code = 128 + 9 // killed by a signal; only SIGKILL is expected here
		}
		b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.out", i+1)))
		l, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.log", i+1)))
		res[i].log = string(l)
		clitest.CheckJSON(t, "consensus", b)
		if len(b) > 0 {
			if err := json.Unmarshal(b, &res[i].out); err != nil {
				t.Fatalf("member %d printed %q: %v", i+1, b, err)
			}
		}
	}
	return res
}

func TestFloodSetSurvivesTwoKilledInRound2(t *testing.T) {
	// Member 1 holds the minimum and dies in round 2 after reaching one
	// successor; member 2 dies in round 2 after reaching three.
	args := [][]string{
		{"--value", "1", "--crash-round", "2", "--crash-after", "1"},
		{"--value", "12", "--crash-round", "2", "--crash-after", "3"},
		{"--value", "13"}, {"--value", "14"}, {"--value", "15"}, {"--value", "16"}, {"--value", "17"},
	}
	res := cluster(t, []string{"--algo", "floodset", "--f", "2", "--round", "100ms"}, args)
	for i := 0; i < 2; i++ {
		if res[i].code != 137 || res[i].out["event"] != "crash" || res[i].out["round"] != 2.0 {
			t.Fatalf("member %d: exit %d, %v\n%s", i+1, res[i].code, res[i].out, res[i].log)
		}
	}
	var value any
	for i := 2; i < 7; i++ {
		r := res[i]
		if r.code != 0 || r.out["event"] != "decide" || r.out["round"] != 3.0 {
			t.Fatalf("member %d: exit %d, %v\n%s", i+1, r.code, r.out, r.log)
		}
		if i == 2 {
			value = r.out["value"]
		} else if r.out["value"] != value {
			t.Fatalf("disagreement: member 3 decided %v, member %d decided %v", value, i+1, r.out["value"])
		}
		if m := r.out["messages"].(float64); m > 6*3 {
			t.Errorf("member %d sent %v messages, more than (n-1)(f+1)", i+1, m)
		}
	}
	// Member 1's value reached member 2 in round 1 and member 2 passed it
	// on before dying, so the minimum survives.
	t.Logf("survivors decided %v in round 3", value)
}

// TestFloodSetOneMemberEarly: member 1 starts 1.3 s before the rest,
// without --start-at, and holds the minimum. The start barrier holds it
// until the others are up, so all four decide its value; a member that
// could not have taken part in every round would exit 69 instead. What
// may never happen is two members deciding different values, both
// exiting 0.
func TestFloodSetOneMemberEarly(t *testing.T) {
	args := [][]string{{"--value", "17"}, {"--value", "27"}, {"--value", "28"}, {"--value", "29"}}
	// Rounds end as soon as every peer is heard; a long deadline only keeps
	// a starved scheduler from turning into a missed round.
	res := clusterStarted(t, []string{"--algo", "floodset", "--f", "1", "--round", "1s"}, args, 1300*time.Millisecond)
	decided := map[any][]int{}
	for i, r := range res {
		switch {
		case r.code == 0 && r.out["event"] == "decide":
			decided[r.out["value"]] = append(decided[r.out["value"]], i+1)
		case r.code == 69 && r.out["event"] == "undecided" && strings.Contains(r.log, "no decision"):
		default:
			t.Fatalf("member %d: exit %d, %v\n%s", i+1, r.code, r.out, r.log)
		}
	}
	if len(decided) > 1 {
		t.Fatalf("members decided different values, all exiting 0: %v", decided)
	}
	if len(decided["17"]) != 4 {
		t.Fatalf("want all four to decide 17 (the barrier held member 1), got %v", decided)
	}
}

// TestUndecidedExits69: a member that cannot decide safely says so and
// exits 69. Alone of three: its start barrier gives up at --start-timeout;
// told to start at once (--start-at), it misses both peers in round 1,
// more than f = 1.
func TestUndecidedExits69(t *testing.T) {
	for _, c := range []struct {
		flags        []string
		round        float64
		missed, text string
	}{
		{[]string{"--wait", "100ms", "--start-timeout", "300ms"}, 0, "[2 3]", "heard from 0 of 2 peers"},
		{[]string{"--start-at", "+0s"}, 2, "[2 3]", "more than f = 1"},
	} {
		args := [][]string{append([]string{"--value", "5"}, c.flags...), nil, nil}
		r := clusterStarted(t, []string{"--algo", "floodset", "--f", "1"}, args, 0)[0]
		if r.code != 69 || r.out["event"] != "undecided" || r.out["round"] != c.round ||
			fmt.Sprint(r.out["missed"]) != c.missed || !strings.Contains(r.log, c.text) {
			t.Fatalf("%v: exit %d, %v\n%s", c.flags, r.code, r.out, r.log)
		}
	}
}

func TestEIGFourGeneralsOneTwoFaced(t *testing.T) {
	for _, values := range [][]string{{"attack", "attack", "attack"}, {"attack", "retreat", "attack"}} {
		args := [][]string{{"--value", values[0]}, {"--value", values[1]}, {"--value", values[2]},
			{"--value", "attack", "--byzantine", "two-faced", "--lie", "retreat"}}
		res := cluster(t, []string{"--algo", "eig", "--f", "1", "--round", "100ms", "--default", "retreat"}, args)
		for i := 0; i < 3; i++ {
			if res[i].code != 0 || res[i].out["event"] != "decide" || res[i].out["value"] != res[0].out["value"] {
				t.Fatalf("loyal members disagree or failed: %v %v %v", res[0].out, res[1].out, res[2].out)
			}
		}
		if values[1] == "attack" && res[0].out["value"] != "attack" {
			t.Fatalf("validity: all loyal said attack, decided %v", res[0].out["value"])
		}
		if res[3].out["event"] != "byzantine" {
			t.Fatalf("traitor: %v", res[3].out)
		}
	}
}

func TestEIGThreeGeneralsUnsafe(t *testing.T) {
	args := [][]string{{"--value", "attack"}, {"--value", "retreat"},
		{"--value", "attack", "--byzantine", "two-faced", "--lie", "retreat"}}
	res := cluster(t, []string{"--algo", "eig", "--f", "1", "--round", "100ms", "--default", "retreat", "--unsafe"}, args)
	if res[0].out["value"] == res[1].out["value"] {
		t.Fatalf("n = 3, f = 1 with a two-faced traitor: expected the loyal generals to split, both decided %v", res[0].out["value"])
	}
}

func TestUsageErrors(t *testing.T) {
	p3 := "1=127.0.0.1:7101,2=127.0.0.1:7102,3=127.0.0.1:7103"
	usageErrors(t, []usageCase{
		{[]string{"run", "--algo", "eig", "--id", "1", "--peers", p3, "--f", "1", "--value", "x"}, "n > 3f"},
		{[]string{"run", "--id", "1", "--peers", p3, "--f", "3", "--value", "x"}, "out of range"},
		{[]string{"run", "--id", "1", "--peers", p3, "--f", "1"}, "--value is required"},
		{[]string{"run", "--id", "1", "--peers", "1=nowhere", "--value", "1"}, "host:port"},
		{[]string{"run", "--id", "9", "--peers", p3, "--value", "1"}, "not in --peers"},
		{[]string{"run", "--id", "1", "--peers", p3, "--value", "1", "--byzantine", "two-faced"}, "crash faults only"},
		{[]string{"run", "--id", "1", "--peers", p3, "--value", "1", "--start-at", "someday"}, "--start-at"},
	})
}

// signedKeys makes n key files with `consensus keygen` and returns the
// directory and the public-keys file.
func signedKeys(t *testing.T, n int) (string, string) {
	t.Helper()
	dir := t.TempDir()
	pubs := filepath.Join(dir, "pubkeys.txt")
	var lines []string
	for i := 1; i <= n; i++ {
		out, err := exec.Command(bin, "keygen", "--id", fmt.Sprint(i), "--out", filepath.Join(dir, fmt.Sprintf("%d.key", i))).Output()
		if err != nil {
			t.Fatalf("keygen: %v", err)
		}
		lines = append(lines, strings.TrimSpace(string(out)))
	}
	if err := os.WriteFile(pubs, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, pubs
}

// TestSignedFiveWithTwoTraitors: n = 5, f = 2 (refused without
// signatures: EIG needs n > 3f) decides with two Byzantine members, one
// equivocating and one forging, and a loyal member's value stands in the
// agreed vector. The forgeries are counted, not believed.
func TestSignedFiveWithTwoTraitors(t *testing.T) {
	dir, pubs := signedKeys(t, 5)
	key := func(i int) []string { return []string{"--signing-key", filepath.Join(dir, fmt.Sprintf("%d.key", i))} }
	for _, values := range [][]string{{"attack", "attack", "attack"}, {"attack", "retreat", "attack"}} {
		args := [][]string{
			append(key(1), "--value", values[0]), append(key(2), "--value", values[1]), append(key(3), "--value", values[2]),
			append(key(4), "--value", "attack", "--byzantine", "two-faced", "--lie", "retreat"),
			append(key(5), "--value", "retreat", "--byzantine", "forger", "--lie", "retreat"),
		}
		res := cluster(t, []string{"--signed", "--public-keys", pubs, "--f", "2", "--round", "100ms", "--default", "retreat"}, args)
		forged := 0.0
		for i := 0; i < 3; i++ {
			r := res[i]
			if r.code != 0 || r.out["event"] != "decide" || r.out["value"] != res[0].out["value"] || r.out["round"] != 3.0 {
				t.Fatalf("loyal members disagree or failed: %v %v %v\n%s", res[0].out, res[1].out, res[2].out, r.log)
			}
			vec, _ := r.out["vector"].([]any)
			if len(vec) != 5 || vec[0] != values[0] || vec[1] != values[1] || vec[2] != values[2] {
				t.Fatalf("member %d's vector %v does not hold the loyal inputs %v", i+1, r.out["vector"], values)
			}
			if fmt.Sprint(vec) != fmt.Sprint(res[0].out["vector"]) {
				t.Fatalf("vectors differ: member 1 %v, member %d %v", res[0].out["vector"], i+1, vec)
			}
			f, _ := r.out["forged"].(float64)
			forged += f
		}
		if values[1] == "attack" && res[0].out["value"] != "attack" {
			t.Fatalf("validity: all loyal said attack, decided %v", res[0].out["value"])
		}
		if forged == 0 {
			t.Fatalf("the forger's entries were not counted as forged")
		}
		for i := 3; i < 5; i++ {
			if res[i].out["event"] != "byzantine" {
				t.Fatalf("traitor %d: %v", i+1, res[i].out)
			}
		}
		t.Logf("inputs %v: decided %v, vector %v, %v forged entries dropped", values, res[0].out["value"], res[0].out["vector"], forged)
	}
}

// TestSignedUsage: the same five without --signed are refused (n > 3f),
// n ≤ 2f is refused with signatures too, and bad key files are 64.
func TestSignedUsage(t *testing.T) {
	dir, pubs := signedKeys(t, 5)
	p5 := "1=127.0.0.1:7101,2=127.0.0.1:7102,3=127.0.0.1:7103,4=127.0.0.1:7104,5=127.0.0.1:7105"
	p4 := "1=127.0.0.1:7101,2=127.0.0.1:7102,3=127.0.0.1:7103,4=127.0.0.1:7104"
	k1 := filepath.Join(dir, "1.key")
	loose := filepath.Join(dir, "loose.key")
	b, _ := os.ReadFile(k1)
	os.WriteFile(loose, b, 0o644)
	usageErrors(t, []usageCase{
		{[]string{"run", "--algo", "eig", "--id", "1", "--peers", p5, "--f", "2", "--value", "x"}, "n > 3f"},
		{[]string{"run", "--signed", "--signing-key", k1, "--public-keys", pubs, "--id", "1", "--peers", p4, "--f", "2", "--value", "x"}, "n > 2f"},
		{[]string{"run", "--signed", "--id", "1", "--peers", p5, "--f", "2", "--value", "x"}, "--signing-key"},
		{[]string{"run", "--signed", "--signing-key", loose, "--public-keys", pubs, "--id", "1", "--peers", p5, "--f", "2", "--value", "x"}, "chmod 600"},
		{[]string{"run", "--signed", "--signing-key", k1, "--public-keys", pubs, "--id", "2", "--peers", p5, "--f", "2", "--value", "x"}, "matching its private key"},
		{[]string{"run", "--signed", "--algo", "eig", "--signing-key", k1, "--public-keys", pubs, "--id", "1", "--peers", p5, "--value", "x"}, "contradict"},
		{[]string{"keygen", "--id", "1", "--out", k1}, "never overwritten"},
	})
}

type usageCase struct {
	args []string
	want string
}

// usageErrors runs each case and wants exit 64 with the text in its output.
func usageErrors(t *testing.T, cases []usageCase) {
	t.Helper()
	for _, c := range cases {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		code := -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 64 || !strings.Contains(string(out), c.want) {
			t.Errorf("consensus %v: exit %d, want 64 with %q:\n%s", c.args, code, c.want, out)
		}
	}
}
