package main

// Multi-process tests: real elect binaries on loopback, started through
// scripts/cluster.sh, with SIGKILL, SIGSTOP and restarts. Every test reads
// the members' stdout (one event per line) and waits for events, never for
// a fixed time; all reports are fed to election.Checker.

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/election"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

func transportFor(peers map[node.ID]string) (transport.Transport, error) {
	return transport.ListenUDP("127.0.0.1:0", peers)
}

var electBin string

func TestMain(m *testing.M) {
	if file := os.Getenv(witnessEnv); file != "" {
		witness(file) // this test binary, run by elect as the command
	}
	clitest.Main(m, "elect", &electBin)
}

// waitLimit bounds every wait for an event; it is a failure deadline, not
// a synchronisation device.
const waitLimit = 15 * time.Second

type cluster struct {
	*clitest.Cluster
	t *testing.T
}

func startCluster(t *testing.T, n int, args ...string) *cluster {
	return startClusterIn(t, t.TempDir(), n, args...)
}

func startClusterIn(t *testing.T, dir string, n int, args ...string) *cluster {
	t.Helper()
	return &cluster{clitest.StartCluster(t, dir, n, append([]string{electBin, "run", "--no-color"}, args...)...), t}
}

func (c *cluster) ctl(args ...string) { c.t.Helper(); c.Ctl(args...) }

// reports parses a member's stdout into leader events.
func (c *cluster) reports(id int) []election.LeaderEvent {
	b, _ := os.ReadFile(filepath.Join(c.Dir, fmt.Sprintf("%d.out", id)))
	var evs []election.LeaderEvent
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var l node.ID
		var term uint64
		if _, err := fmt.Sscanf(sc.Text(), "leader %d term %d", &l, &term); err == nil {
			evs = append(evs, election.LeaderEvent{Leader: l, Term: term})
		}
	}
	return evs
}

func (c *cluster) last(id int) (election.LeaderEvent, bool) {
	r := c.reports(id)
	if len(r) == 0 {
		return election.LeaderEvent{}, false
	}
	return r[len(r)-1], true
}

// waitAgree waits until every member in ids last reported leader want with
// a term above minTerm, and returns that term.
func (c *cluster) waitAgree(ids []int, want node.ID, minTerm uint64) uint64 {
	c.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		var term uint64
		ok := true
		for _, id := range ids {
			ev, have := c.last(id)
			if !have || ev.Leader != want || ev.Term <= minTerm || (term != 0 && ev.Term != term) {
				ok = false
				break
			}
			term = ev.Term
		}
		if ok {
			return term
		}
		if time.Now().After(deadline) {
			for _, id := range ids {
				ev, _ := c.last(id)
				c.t.Logf("member %d last reported %v", id, ev)
			}
			c.t.Fatalf("members %v did not agree on leader %d above term %d within %v", ids, want, minTerm, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restartLosers waits until each member has either followed want without
// ever leading, or exited, and starts the exited ones again (without their
// child's file, which the test reads later).
func (c *cluster) restartLosers(ids []int, want node.ID) {
	c.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for _, id := range ids {
		for {
			if _, err := os.Stat(filepath.Join(c.Dir, fmt.Sprintf("%d.exit", id))); err == nil {
				os.Remove(filepath.Join(c.Dir, fmt.Sprintf("child-%d", id)))
				c.ctl("restart", strconv.Itoa(id))
				break
			}
			if ev, have := c.last(id); have && ev.Leader == want && (node.ID(id) == want || !c.led(id) || !c.heldLease(id)) {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("member %d neither followed %d nor exited within %v", id, want, waitLimit)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// heldLease: member id has reported holding a leader's lease, which is
// when it starts its command. A member that led but lost before its lease
// came started none, so it follows the new leader instead of exiting.
func (c *cluster) heldLease(id int) bool {
	b, _ := os.ReadFile(filepath.Join(c.Dir, fmt.Sprintf("%d.out", id)))
	return bytes.Contains(b, []byte("lease held term "))
}

// led: member id has reported itself as leader.
func (c *cluster) led(id int) bool {
	for _, ev := range c.reports(id) {
		if ev.Leader == node.ID(id) {
			return true
		}
	}
	return false
}

// check feeds every member's reports to the safety checker.
func (c *cluster) check() {
	c.t.Helper()
	chk := election.NewChecker()
	for i := 1; i <= c.N; i++ {
		for _, ev := range c.reports(i) {
			if err := chk.Observe(node.ID(i), ev); err != nil {
				c.t.Fatalf("safety: %v", err)
			}
		}
	}
}

func (c *cluster) waitFile(name string) string {
	c.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if b, err := os.ReadFile(filepath.Join(c.Dir, name)); err == nil && len(b) > 0 && bytes.HasSuffix(b, []byte("\n")) {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not written within %v", name, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestKillLeaderAndRestart(t *testing.T) {
	for _, algo := range []string{"bully", "ring", "chang-roberts"} {
		t.Run(algo, func(t *testing.T) {
			c := startCluster(t, 5, "--algo", algo)
			all := []int{1, 2, 3, 4, 5}
			t1 := c.waitAgree(all, 5, 0)
			c.ctl("kill", "5")
			t2 := c.waitAgree([]int{1, 2, 3, 4}, 4, t1)
			if algo == "bully" {
				// A recovered higher process takes over, at a higher term.
				c.ctl("restart", "5")
				c.waitAgree(all, 5, t2)
			}
			c.check()
		})
	}
}

func TestTCPTransport(t *testing.T) {
	c := startCluster(t, 3, "--transport", "tcp")
	t1 := c.waitAgree([]int{1, 2, 3}, 3, 0)
	c.ctl("kill", "3")
	c.waitAgree([]int{1, 2}, 2, t1)
	out, err := exec.Command(electBin, "status", "--transport", "tcp", "--peers", "@"+filepath.Join(c.Dir, "peers")).CombinedOutput()
	if exitCode(err) != 0 || !strings.Contains(string(out), "member 3 silent") {
		t.Fatalf("status over tcp: exit %d\n%s", exitCode(err), out)
	}
	c.check()
}

func TestPausedLeaderStepsDownAndStopsChild(t *testing.T) {
	dir := t.TempDir()
	// The child records its PID and term, then runs until stopped.
	child := `echo "$$ $ELECT_TERM" > "$0/child-$ELECT_ID.tmp" && mv "$0/child-$ELECT_ID.tmp" "$0/child-$ELECT_ID"; exec sleep 600`
	c := startClusterIn(t, dir, 5, "--kill-grace", "1s", "--", "sh", "-c", child, dir)
	all := []int{1, 2, 3, 4, 5}
	// In the first election a lower member can lead for a moment before it
	// hears 5; if its lease came and it ran a child, it exits 76
	// (leadership lost) when 5 takes over. Such members are started again
	// and follow 5.
	c.restartLosers(all, 5)
	t1 := c.waitAgree(all, 5, 0)
	fields := strings.Fields(c.waitFile("child-5"))
	childPid, _ := strconv.Atoi(fields[0])
	if fields[1] != strconv.FormatUint(t1, 10) {
		t.Fatalf("child saw ELECT_TERM=%s, leader term is %d", fields[1], t1)
	}
	// SIGSTOP the leader past the timeout: the others elect 4. By the time
	// 4's child starts, 5's lease has run out and its watchdog has killed
	// 5's child, though 5 itself is stopped.
	c.ctl("pause", "5")
	t2 := c.waitAgree([]int{1, 2, 3, 4}, 4, t1)
	if f := strings.Fields(c.waitFile("child-4")); f[1] != strconv.FormatUint(t2, 10) {
		t.Fatalf("new leader's child saw ELECT_TERM=%s, want %d", f[1], t2)
	}
	if !clitest.Gone(childPid) {
		t.Fatalf("4's child started while paused 5's child %d still ran", childPid)
	}
	// SIGCONT: 5 learns of term t2 > t1 (and that its lease ran out),
	// steps down and exits 76.
	c.ctl("resume", "5")
	code := c.waitFile("5.exit")
	if code != strconv.Itoa(cli.ExitLost) {
		t.Fatalf("resumed leader exited %s, want %d (leadership lost)", code, cli.ExitLost)
	}
	if alive(childPid) {
		t.Fatalf("the old leader's child %d is still running", childPid)
	}
	if out, _ := os.ReadFile(filepath.Join(dir, "5.log")); !strings.Contains(string(out), " lost") {
		t.Errorf("no 'leadership lost' or 'lease lost' in member 5's log:\n%s", out)
	}
	c.check()
}

// TestSignalsAndChildExit: the child's exit code becomes elect's, and a
// SIGTERM to elect reaches the child.
func TestChildExitCodeAndSignals(t *testing.T) {
	dir := t.TempDir()
	peers := "1=" + freeAddr(t)
	cmd := exec.Command(electBin, "run", "--id", "1", "--peers", peers, "--", "sh", "-c", "exit 7")
	if err := cmd.Run(); exitCode(err) != 7 {
		t.Fatalf("child exit 7: elect exited %d (%v)", exitCode(err), err)
	}
	ready := filepath.Join(dir, "child.ready")
	cmd = exec.Command(electBin, "run", "--id", "1", "--peers", peers, "--", "sh", "-c",
		`trap 'exit 42' TERM; touch "$0"; while :; do sleep 0.05; done`, ready)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &cluster{&clitest.Cluster{T: t, Dir: dir}, t}
	c.waitFileExists("child.ready")
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); exitCode(err) != 42 {
		t.Fatalf("SIGTERM forwarded to a child that exits 42: elect exited %d", exitCode(err))
	}
	cmd = exec.Command(electBin, "run", "--id", "1", "--peers", peers, "--", "no-such-command-xyz")
	if err := cmd.Run(); exitCode(err) != 127 {
		t.Fatalf("missing child: exit %d, want 127", exitCode(err))
	}
}

func (c *cluster) waitFileExists(name string) {
	c.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if _, err := os.Stat(filepath.Join(c.Dir, name)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not created within %v", name, waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKilledWrapperKillsChild: SIGKILL on elect leaves no orphan (Pdeathsig).
func TestKilledWrapperKillsChild(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(electBin, "run", "--id", "1", "--peers", "1="+freeAddr(t), "--", "sh", "-c",
		`echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 600`, filepath.Join(dir, "pid"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &cluster{&clitest.Cluster{T: t, Dir: dir}, t}
	pid, _ := strconv.Atoi(c.waitFile("pid"))
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(waitLimit)
	for alive(pid) && !clitest.Gone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d survived its SIGKILLed wrapper", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func freeAddr(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// TestDurationHintScale: a duration given as a bare number is refused
// with a hint in the flag's own scale, that of its default: --lease,
// whose default is the timeout (200ms), suggests milliseconds, not
// seconds (a 200 s lease).
func TestDurationHintScale(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"--lease", "200", "did you mean 200ms?"},
		{"--heartbeat", "50", "did you mean 50ms?"},
		{"--kill-grace", "5", "did you mean 5s?"},
	} {
		out, err := exec.Command(electBin, "run", "--id", "1", "--peers", "1=127.0.0.1:7001", c.flag, c.value, "--", "true").CombinedOutput()
		if exitCode(err) != cli.ExitUsage || !strings.Contains(string(out), c.want) {
			t.Errorf("elect run %s %s: exit %d, want 64 and %q:\n%s", c.flag, c.value, exitCode(err), c.want, out)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--id", "9", "--peers", "1=127.0.0.1:7001"},
		{"run", "--id", "1", "--peers", "1=nonsense"},
		{"run", "--id", "1"},
		{"run", "--id", "1", "--peers", "1=127.0.0.1:7001", "--algo", "paxos"},
		{"run", "--id", "1", "--peers", "1=127.0.0.1:7001", "--heartbeat", "100ms", "--timeout", "150ms"},
		{"run", "--id", "1", "--peers", "1=127.0.0.1:7001", "--awareness", "-1"},
		{"run", "--id", "1", "--peers", "1=127.0.0.1:7001", "--awareness", "21"},
		{"run", "--id", "1", "--peers", "1=127.0.0.1:7001,2=127.0.0.1:7002", "--backups", "1"},
		{"run", "--id", "1", "--peers", "1=127.0.0.1:7001,2=127.0.0.1:7002", "--algo", "chang-roberts", "--backups", "-1"},
		{"run", "--id", "1", "--peers", "1=127.0.0.1:7001,2=127.0.0.1:7002", "--algo", "chang-roberts", "--backups", "2"},
		{"run", "--bogus-flag"},
		{"status"},
		{"run", "--id", "1", "--peers", "1=127.0.0.1:7001", "--key-file", "/nonexistent"},
		{"run", "--id", "1", "--peers", "1=127.0.0.1:7001,2=192.0.2.7:7001"}, // a remote peer and no key
	} {
		out, err := exec.Command(electBin, args...).CombinedOutput()
		if exitCode(err) != cli.ExitUsage {
			t.Errorf("elect %v: exit %d, want 64\n%s", args, exitCode(err), out)
		} else if len(bytes.TrimSpace(out)) == 0 {
			t.Errorf("elect %v: exit 64 without a message", args)
		}
	}
	// --insecure is the deliberate choice that lets it past the key check.
	out, _ := exec.Command(electBin, "run", "--id", "1", "--peers", "1=127.0.0.1:7001,2=192.0.2.7:7001", "--insecure", "--heartbeat", "-1s").CombinedOutput()
	if strings.Contains(string(out), "loopback") || !strings.Contains(string(out), "heartbeat") {
		t.Errorf("--insecure with a remote peer: %s", out)
	}
	// The unauthenticated warning is on stderr whatever the log level.
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(electBin, "run", "--id", "1", "--peers", "1="+freeAddr(t), "--log-level", "error", "--ready-file", ready)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	clitest.WaitFor(t, waitLimit, func() bool { _, err := os.Stat(ready); return err == nil })
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if !strings.Contains(stderr.String(), "NOT authenticated") {
		t.Errorf("no warning about running without a key at --log-level error: %q", stderr.String())
	}
	out, err := exec.Command(electBin, "status", "--peers", "1="+freeAddr(t), "--wait", "200ms").CombinedOutput()
	if exitCode(err) != cli.ExitUnavailable {
		t.Errorf("status with nobody listening: exit %d, want 69\n%s", exitCode(err), out)
	}
}

func TestStatusAgreementAndDisagreement(t *testing.T) {
	c := startCluster(t, 3)
	term := c.waitAgree([]int{1, 2, 3}, 3, 0)
	out, err := exec.Command(electBin, "status", "--peers", "@"+filepath.Join(c.Dir, "peers")).Output()
	if err != nil || !strings.HasPrefix(string(out), fmt.Sprintf("leader 3 term %d\n", term)) {
		t.Fatalf("status: %v\n%s", err, out)
	}
	out, err = exec.Command(electBin, "status", "--json", "--peers", "@"+filepath.Join(c.Dir, "peers")).Output()
	if err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	clitest.CheckJSON(t, "elect", out)
	// Member 3 stops sending (all its frames dropped) but still answers
	// status queries: 1 and 2 elect 2, 3 keeps leading its own term.
	c.ctl("kill", "3")
	c.waitAgree([]int{1, 2}, 2, term)
	b, _ := os.ReadFile(filepath.Join(c.Dir, "3.cmd"))
	os.WriteFile(filepath.Join(c.Dir, "3.cmd"), append(bytes.TrimSpace(b), []byte(" --fault-drop 1")...), 0o644)
	c.ctl("restart", "3")
	deadline := time.Now().Add(waitLimit)
	for {
		ev, ok := c.last(3)
		if ok && ev.Leader == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("isolated member 3 never led itself")
		}
		time.Sleep(10 * time.Millisecond)
	}
	out, err = exec.Command(electBin, "status", "--peers", "@"+filepath.Join(c.Dir, "peers")).Output()
	if exitCode(err) != cli.ExitUnavailable || !strings.HasPrefix(string(out), "disagreement") {
		t.Fatalf("status with a split cluster: exit %d, want 69\n%s", exitCode(err), out)
	}
}

// TestAuthentication: a member with the wrong key cannot sway the others,
// and a replayed frame is refused; both show in the counters.
func TestAuthentication(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.key")
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(good, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	os.WriteFile(bad, []byte(strings.Repeat("cd", 32)+"\n"), 0o600)
	peersFile := filepath.Join(dir, "peers")
	// With --state-file, as docs/elect.md asks of members that restart:
	// without it the restarted member would lead its old term again, which
	// the checker rejects (a fencing number handed out twice).
	c := startClusterIn(t, dir, 5, "--key-file", good, "--state-file", filepath.Join(dir, "{id}.state"))
	t1 := c.waitAgree([]int{1, 2, 3, 4, 5}, 5, 0)
	c.ctl("kill", "5")
	t2 := c.waitAgree([]int{1, 2, 3, 4}, 4, t1)
	b, _ := os.ReadFile(filepath.Join(dir, "5.cmd"))
	os.WriteFile(filepath.Join(dir, "5.cmd"), bytes.ReplaceAll(b, []byte(good), []byte(bad)), 0o644)
	before := len(c.reports(5))
	c.ctl("restart", "5")
	// The impostor hears nobody and leads itself, but the others never
	// follow it.
	deadline := time.Now().Add(waitLimit)
	for {
		if r := c.reports(5); len(r) > before && r[len(r)-1].Leader == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("wrong-key member never led itself")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, id := range []int{1, 2, 3, 4} {
		if ev, _ := c.last(id); ev.Leader != 4 || ev.Term != t2 {
			t.Fatalf("member %d was swayed by the wrong-key member: %v", id, ev)
		}
	}
	// Counters: authentication failures on the honest members.
	key, _ := wire.LoadKey(good)
	peers, _ := cli.ParsePeers("@" + peersFile)
	st := queryOne(t, peers, key, 1)
	if st.Counters["dropped_auth"] == 0 {
		t.Fatalf("member 1 counted no authentication failures: %v", st.Counters)
	}
	// Replay: send one sealed status query twice; the second is dropped.
	f, _ := wire.NewFramer(cli.ClusterKey("roundtable", peers), 0xF1234567, uint64(time.Now().UnixNano()), key)
	frame, _ := f.Seal(wire.FamilyControl, driver.ControlStatusQuery, 1, nil)
	conn, err := net.Dial("udp", peers[1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write(frame)
	conn.SetReadDeadline(time.Now().Add(waitLimit))
	buf := make([]byte, 65536)
	if _, err := conn.Read(buf); err != nil {
		t.Fatalf("first copy of the frame got no answer: %v", err)
	}
	conn.Write(frame)
	replays := st.Counters["dropped_replay"]
	deadline = time.Now().Add(waitLimit)
	for queryOne(t, peers, key, 1).Counters["dropped_replay"] <= replays {
		if time.Now().After(deadline) {
			t.Fatal("replayed frame not counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.check()
}

func queryOne(t *testing.T, peers map[node.ID]string, key []byte, id node.ID) driver.StatusReply {
	t.Helper()
	f, _ := wire.NewFramer(cli.ClusterKey("roundtable", peers), 0xF0000001, uint64(time.Now().UnixNano()), key)
	tr, err := transportFor(peers)
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := driver.Query(t.Context(), f, tr, []node.ID{id}, 2*time.Second)
	r, ok := rep[id]
	if !ok {
		t.Fatalf("member %d did not answer a status query", id)
	}
	return r
}

// TestStatusNoLeaderYet: before the first election ends, status says so
// (exit 69), rather than reporting a disagreement.
func TestStatusNoLeaderYet(t *testing.T) {
	dir := t.TempDir()
	self, higher := freeAddr(t), freeAddr(t)
	ready := filepath.Join(dir, "ready")
	// Member 2 never answers, and member 1 waits a minute for its answer
	// before it may lead: its first election cannot end during the test.
	cmd := exec.Command(electBin, "run", "--id", "1", "--peers", "1="+self+",2="+higher,
		"--answer-timeout", "1m", "--ready-file", ready, "--no-color", "--log-level", "error")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	clitest.WaitFor(t, waitLimit, func() bool { _, err := os.Stat(ready); return err == nil })
	out, err := exec.Command(electBin, "status", "--peers", "1="+self+",2="+higher, "--wait", "300ms").Output()
	if exitCode(err) != cli.ExitUnavailable || !strings.HasPrefix(string(out), "no leader yet\n") {
		t.Fatalf("status before the first election ended: exit %d, want 69 and 'no leader yet'\n%s", exitCode(err), out)
	}
}

// TestForgedFrames: without a key, one forged datagram "from 3" with an
// incarnation far ahead must not make members 1 and 2 drop 3's real frames
// (they would elect 2 while 3 still leads), and forged terms beyond
// node.MaxTerm are dropped, not adopted (a term near 2^64 once wrapped).
func TestForgedFrames(t *testing.T) {
	c := startCluster(t, 3)
	term := c.waitAgree([]int{1, 2, 3}, 3, 0)
	peers, err := cli.ParsePeers("@" + filepath.Join(c.Dir, "peers"))
	if err != nil {
		t.Fatal(err)
	}
	forge := func(incarnation uint64, msg election.Msg) {
		f, _ := wire.NewFramer(cli.ClusterKey("roundtable", peers), 3, incarnation, nil)
		typ, body, err := election.Codec{}.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		for _, to := range []node.ID{1, 2} {
			frame, _ := f.Seal(wire.FamilyElection, typ, to, body)
			conn, err := net.Dial("udp", peers[to])
			if err != nil {
				t.Fatal(err)
			}
			conn.Write(frame)
			conn.Close()
		}
	}
	// (within wire.FutureIncarnation of the clock, which binds sealed frames only)
	ahead := uint64(time.Now().Add(wire.FutureIncarnation / 2).UnixNano())
	forge(ahead, election.Msg{Type: election.MsgHeartbeat, Leader: 3, Term: term})
	forge(ahead+1, election.Msg{Type: election.MsgHeartbeat, Leader: 3, Term: 1 << 33})
	// Had 1 and 2 taken the forged incarnation for 3's new life, every
	// real frame of 3 would now be dropped as stale, and they would elect 2.
	// Wait until each has accepted 20 more frames (3's heartbeats among
	// them), then check that none was dropped as stale and that no forged
	// term was adopted.
	for _, id := range []node.ID{1, 2} {
		before := queryOne(t, peers, nil, id).Counters["accepted"]
		clitest.WaitFor(t, waitLimit, func() bool { return queryOne(t, peers, nil, id).Counters["accepted"] >= before+20 })
		if st := queryOne(t, peers, nil, id); st.Counters["dropped_stale"] != 0 {
			t.Fatalf("member %d dropped %d of 3's real frames as stale after a forged incarnation", id, st.Counters["dropped_stale"])
		}
		for _, ev := range c.reports(int(id)) {
			if ev.Term >= 1<<33 {
				t.Fatalf("member %d adopted a forged term: %+v", id, ev)
			}
		}
	}
}

// TestTCPAcceptSurvivesEMFILE: a member out of descriptors keeps
// accepting once they are free again (its accept loop once returned for
// good on EMFILE, and the member never heard from anyone again).
func TestTCPAcceptSurvivesEMFILE(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit")
	}
	// A port free for TCP (freeAddr checks UDP): the member listens on TCP.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(prlimit, "--nofile=40:40", electBin, "run", "--transport", "tcp", "--id", "1", "--peers", "1="+addr,
		"--ready-file", ready, "--no-color", "--log-level", "error")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	status := func() ([]byte, error) {
		return exec.Command(electBin, "status", "--transport", "tcp", "--peers", "1="+addr, "--wait", "2s").CombinedOutput()
	}
	clitest.WaitFor(t, 30*time.Second, func() bool {
		select {
		case <-exited:
			t.Fatalf("the member exited: %s", stderr.String())
		default:
		}
		out, err := status()
		return err == nil && strings.HasPrefix(string(out), "leader 1 ")
	})
	var conns []net.Conn
	for i := 0; i < 80; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			conns = append(conns, c)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	// It accepts again (an accept loop that gave up never would): the first
	// answers may wait for the backlog of closed connections to drain.
	clitest.WaitFor(t, 30*time.Second, func() bool {
		out, err := status()
		return err == nil && strings.HasPrefix(string(out), "leader 1 ")
	})
}

// TestStatusNeedsLiveMajority: status exits 0 only while a majority answers
// and the leader they name answers as leader. Followers keep naming a
// killed leader until their --timeout (5 s here), and a member left alone
// still leads itself; both must read as 69, not as a leader.
func TestStatusNeedsLiveMajority(t *testing.T) {
	c := startCluster(t, 3, "--timeout", "5s")
	term := c.waitAgree([]int{1, 2, 3}, 3, 0)
	peers := "@" + filepath.Join(c.Dir, "peers")
	status := func() (int, string) {
		out, err := exec.Command(electBin, "status", "--peers", peers, "--wait", "500ms").Output()
		return exitCode(err), string(out)
	}
	if code, out := status(); code != 0 || !strings.HasPrefix(out, fmt.Sprintf("leader 3 term %d\n", term)) {
		t.Fatalf("status of a healthy cluster: exit %d\n%s", code, out)
	}
	c.ctl("kill", "3")
	if code, out := status(); code != cli.ExitUnavailable || !strings.HasPrefix(out, "no live leader\n") {
		t.Fatalf("status right after the leader was killed: exit %d, want 69 and 'no live leader'\n%s", code, out)
	}
	// 1 and 2 elect 2; then only 2 is left.
	c.waitAgree([]int{1, 2}, 2, term)
	c.ctl("kill", "1")
	if code, out := status(); code != cli.ExitUnavailable || !strings.HasPrefix(out, "no majority\n") {
		t.Fatalf("status with 1 of 3 members alive: exit %d, want 69 and 'no majority'\n%s", code, out)
	}
}

// TestBackgroundJobEndsWithRun: SIGINT to `elect run -- sh -c 'sleep 30 &
// wait'` ends the shell, and its background sleep (started with SIGINT
// ignored, as a non-interactive shell does) is gone by the time elect
// exits, with a lease (the watchdog's group) and without one.
func TestBackgroundJobEndsWithRun(t *testing.T) {
	for _, lease := range []string{"default", "0"} {
		t.Run("lease-"+lease, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "job")
			args := []string{"run", "--id", "1", "--peers", "1=" + freeAddr(t), "--kill-grace", "2s"}
			if lease != "default" {
				args = append(args, "--lease", lease)
			} else {
				// A lease (the timeout's) long enough for the shell to
				// act on SIGINT: elect resigns at once, and a shell not
				// scheduled before the lease's end on a busy host is
				// killed there by the watchdog (exit 137), which, under
				// realtime scheduling, is never late for it.
				args = append(args, "--timeout", "2s")
			}
			args = append(args, "--", "sh", "-c", `sleep 30 & echo $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`, pidFile)
			cmd := exec.Command(electBin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			c := &cluster{&clitest.Cluster{T: t, Dir: dir}, t}
			job, _ := strconv.Atoi(c.waitFile("job"))
			t.Cleanup(func() { syscall.Kill(job, syscall.SIGKILL) })
			cmd.Process.Signal(syscall.SIGINT)
			err := cmd.Wait()
			if !clitest.Gone(job) {
				t.Fatalf("the background job %d outlived elect run (%v):\n%s", job, err, stderr.String())
			}
			if exitCode(err) != 128+int(syscall.SIGINT) {
				t.Errorf("elect run after SIGINT: exit %d, want %d:\n%s", exitCode(err), 128+int(syscall.SIGINT), stderr.String())
			}
		})
	}
}

// TestFenceUniquePerCommand: every command run on a member gets an
// ELECT_FENCE above the one before, whether its lease was lost and taken
// again (here: the followers stopped, then resumed; the term may stay the
// same, so ELECT_TERM may repeat) or the member restarted with its
// --state-file; and the fence carries its term in the high 32 bits.
func TestFenceUniquePerCommand(t *testing.T) {
	dir := t.TempDir()
	// A short lease and a long timeout: stopped followers cost the leader
	// its lease long before they would suspect it, so on waking they
	// follow it in the same term and it takes the lease again in that term.
	c := startClusterIn(t, dir, 3, "--rerun", "--kill-grace", "100ms", "--state-file", filepath.Join(dir, "{id}.state"),
		"--timeout", "3s", "--lease", "300ms",
		"--", "sh", "-c", `echo "$ELECT_TERM $ELECT_FENCE" >> "$0/runs-$ELECT_ID"; exec sleep 600`, dir)
	runs := func() [][2]uint64 {
		b, _ := os.ReadFile(filepath.Join(dir, "runs-3"))
		var out [][2]uint64
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var term, fence uint64
			if _, err := fmt.Sscanf(l, "%d %d", &term, &fence); err == nil {
				out = append(out, [2]uint64{term, fence})
			} else if l != "" {
				t.Fatalf("member 3's command saw %q, want ELECT_TERM and ELECT_FENCE", l)
			}
		}
		return out
	}
	waitRuns := func(n int) {
		t.Helper()
		clitest.WaitFor(t, waitLimit, func() bool { return len(runs()) >= n })
	}
	c.waitAgree([]int{1, 2, 3}, 3, 0)
	waitRuns(1)
	// The followers stop: 3 keeps leading but loses its lease, and its
	// command; they resume: 3 holds a lease again and runs a second one.
	c.ctl("pause", "1")
	c.ctl("pause", "2")
	clitest.WaitFor(t, waitLimit, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "3.out"))
		return strings.Count(string(b), "lease lost") >= 1
	})
	c.ctl("resume", "1")
	c.ctl("resume", "2")
	waitRuns(2)
	c.ctl("kill", "3")
	c.waitFileExists("3.exit") // gone, before it starts again
	c.ctl("restart", "3")
	waitRuns(3)
	got := runs()
	t.Logf("member 3's commands (ELECT_TERM ELECT_FENCE): %v", got)
	if got[0][0] != got[1][0] {
		t.Errorf("the lease was not taken again in the same term (%d, then %d): the case this test is for did not happen", got[0][0], got[1][0])
	}
	for i, r := range got {
		if r[1]>>32 != r[0] {
			t.Errorf("run %d: fence %d does not carry term %d", i, r[1], r[0])
		}
		if i > 0 && r[1] <= got[i-1][1] {
			t.Errorf("run %d: fence %d not above the one before, %d", i, r[1], got[i-1][1])
		}
	}
}
