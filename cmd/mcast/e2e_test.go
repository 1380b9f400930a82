package main

// Multi-process tests: real mcast members on loopback with injected loss,
// duplication and delay, every member's stdin fed by the test and its
// --json output kept; 'mcast check' judges the logs.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

var mcastBin string

func TestMain(m *testing.M) {
	if n, _ := strconv.Atoi(os.Getenv("MCAST_TEST_LINES")); n > 0 {
		generate(n, os.Getenv("MCAST_TEST_STOP")) // a member's input, for partitioned
		return
	}
	clitest.Main(m, "mcast", &mcastBin)
}

// generate writes n lines to stdout, "line 1" to "line n", one every 3 ms:
// one process where a shell loop started a sleep for every line, which
// on a busy host was most of the load the test made itself. It ends
// early once the file stop (if named) exists: the input lasts as long as
// the test needs it, however slowly a loaded host gets there.
func generate(n int, stop string) {
	w := bufio.NewWriter(os.Stdout)
	for i := 1; i <= n; i++ {
		if stop != "" && i%64 == 0 {
			if _, err := os.Stat(stop); err == nil {
				return
			}
		}
		fmt.Fprintf(w, "line %d\n", i)
		if w.Flush() != nil {
			return
		}
		time.Sleep(3 * time.Millisecond)
	}
}

type member struct {
	id    int
	peers string // the --peers of the group
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   string
	done  chan error
}

func freePorts(t testing.TB, n int) []string {
	t.Helper()
	var addrs []string
	var conns []net.PacketConn
	for i := 0; i < n; i++ {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		addrs = append(addrs, c.LocalAddr().String())
	}
	for _, c := range conns {
		c.Close()
	}
	return addrs
}

// startGroup starts n members with args, stdin open.
func startGroup(t testing.TB, n int, args ...string) []*member {
	t.Helper()
	dir := t.TempDir()
	var peers []string
	for i, a := range freePorts(t, n) {
		peers = append(peers, fmt.Sprintf("%d=%s", i+1, a))
	}
	var ms []*member
	for i := 1; i <= n; i++ {
		m := &member{id: i, peers: strings.Join(peers, ","), log: filepath.Join(dir, fmt.Sprintf("%d.log", i)), done: make(chan error, 1)}
		out, err := os.Create(m.log)
		if err != nil {
			t.Fatal(err)
		}
		m.cmd = exec.Command(mcastBin, append([]string{"run", "--id", fmt.Sprint(i), "--peers", strings.Join(peers, ","),
			"--json", "--no-color", "--log-level", "warn"}, args...)...)
		m.cmd.Stdout = out
		stderr, _ := os.Create(filepath.Join(dir, fmt.Sprintf("%d.err", i)))
		m.cmd.Stderr = stderr
		m.stdin, _ = m.cmd.StdinPipe()
		if err := m.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { m.done <- m.cmd.Wait(); out.Close(); stderr.Close() }()
		t.Cleanup(func() {
			m.cmd.Process.Kill()
			if t.Failed() {
				b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.err", m.id)))
				t.Logf("member %d stderr:\n%s", m.id, b)
			}
		})
		ms = append(ms, m)
	}
	return ms
}

func (m *member) write(t testing.TB, from, to int) {
	t.Helper()
	w := bufio.NewWriter(m.stdin)
	for k := from; k <= to; k++ {
		fmt.Fprintf(w, "line %d of member %d\n", k, m.id)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("member %d stdin: %v", m.id, err)
	}
}

// lines counts the lines of m's log so far.
func (m *member) lines() int {
	b, _ := os.ReadFile(m.log)
	return strings.Count(string(b), "\n")
}

func (m *member) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-m.done:
		if err != nil {
			b, _ := os.ReadFile(strings.TrimSuffix(m.log, ".log") + ".err")
			t.Fatalf("member %d: %v\n%s", m.id, err, b)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("member %d did not finish within 90 s", m.id)
	}
}

// waitOrRemoved is wait for a member that may have been taken out of its
// view meanwhile (a starved process): such a member must exit 76, its
// log must show the removal and its stderr what it missed or what of its
// own may not have reached the others. It reports
// whether that happened.
func (m *member) waitOrRemoved(t *testing.T) bool {
	t.Helper()
	select {
	case err := <-m.done:
		if err == nil {
			return false
		}
		b, _ := os.ReadFile(strings.TrimSuffix(m.log, ".log") + ".err")
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 76 && strings.Contains(readFile(m.log), `"event":"removed"`) &&
			(strings.Contains(string(b), "mcast: missed ") || strings.Contains(string(b), "not delivered by the members that stay")) {
			t.Logf("member %d was taken out of the view (a starved host) and said what it missed:\n%s", m.id, b)
			return true
		}
		t.Fatalf("member %d: %v\n%s", m.id, err, b)
	case <-time.After(90 * time.Second):
		t.Fatalf("member %d did not finish within 90 s", m.id)
	}
	return false
}

func checkLogs(t *testing.T, order string, ms []*member, extra ...string) string {
	t.Helper()
	args := append([]string{"check", "--order", order}, extra...)
	for _, m := range ms {
		args = append(args, m.log)
	}
	out, err := exec.Command(mcastBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mcast check: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestFiveMembersLossy: 5 members, 10% loss, 5% duplication and up to 2 ms
// delay on every frame, 300 lines each; the logs pass the checker for FIFO
// and causal order, and each member exits 0 once everyone has its lines.
func TestFiveMembersLossy(t *testing.T) {
	for _, order := range []string{"fifo", "causal"} {
		t.Run(order, func(t *testing.T) {
			ms := startGroup(t, 5, "--order", order, "--fault-drop", "0.1", "--fault-dup", "0.05", "--fault-delay", "2ms")
			for _, m := range ms {
				m.write(t, 1, 300)
				m.stdin.Close()
			}
			for _, m := range ms {
				m.wait(t)
			}
			t.Log(checkLogs(t, order, ms))
			for _, m := range ms {
				b, _ := os.ReadFile(m.log)
				clitest.CheckJSON(t, "mcast", b)
			}
		})
	}
}

// TestKillAndPause: member 5 is SIGKILLed mid-stream and member 4 is
// SIGSTOPped while the others keep sending, then resumed. The survivors
// agree on everything, 5's delivered lines included, and member 4 gets
// what it missed while stopped.
func TestKillAndPause(t *testing.T) {
	ms := startGroup(t, 5, "--order", "causal", "--fault-drop", "0.05", "--fault-delay", "1ms")
	for _, m := range ms {
		m.write(t, 1, 100)
	}
	clitest.WaitFor(t, 30*time.Second, func() bool { return ms[4].lines() >= 200 })
	ms[4].cmd.Process.Signal(syscall.SIGKILL)
	ms[3].cmd.Process.Signal(syscall.SIGSTOP)
	before := ms[0].lines()
	for _, m := range ms[:4] {
		m.write(t, 101, 200)
	}
	clitest.WaitFor(t, 30*time.Second, func() bool { return ms[0].lines() >= before+200 })
	ms[3].cmd.Process.Signal(syscall.SIGCONT)
	for _, m := range ms[:4] {
		m.stdin.Close()
	}
	for _, m := range ms[:4] {
		m.wait(t)
	}
	out := checkLogs(t, "causal", ms)
	if !strings.Contains(out, "[5]") {
		t.Fatalf("check did not count member 5 as crashed: %s", out)
	}
	t.Log(out)
}

// TestLineTooLong: a line over the frame limit stops mcast with 64, and
// says which line.
func TestLineTooLong(t *testing.T) {
	cmd := exec.Command(mcastBin, "run", "--id", "1", "--peers", "1="+freePorts(t, 1)[0])
	cmd.Stdin = strings.NewReader("short\n" + strings.Repeat("x", 70000) + "\n")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 64 || !strings.Contains(string(out), "line 2") {
		t.Fatalf("exit %v, want 64 naming line 2:\n%s", err, out)
	}
}

// TestGossipOrder: --order gossip over 5 members with 10% loss, at random
// and along the tree (--tree): every member gets every line (push, then
// pull for what push missed), and the logs pass the checker's integrity
// and agreement.
func TestGossipOrder(t *testing.T) {
	for _, mode := range []string{"random", "tree"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"--order", "gossip", "--fault-drop", "0.1", "--period", "20ms"}
			if mode == "tree" {
				args = append(args, "--tree")
			}
			gossipGroup(t, args)
		})
	}
}

func gossipGroup(t *testing.T, args []string) {
	ms := startGroup(t, 5, args...)
	for _, m := range ms {
		m.write(t, 1, 200)
	}
	// Every member must have all 1,000 lines (its own 200 as sends) before
	// any input ends: gossip members leave once their own lines are out.
	clitest.WaitFor(t, 60*time.Second, func() bool {
		for _, m := range ms {
			if m.lines() < 1000 {
				return false
			}
		}
		return true
	})
	for _, m := range ms {
		m.stdin.Close()
	}
	for _, m := range ms {
		m.wait(t)
	}
	t.Log(checkLogs(t, "unordered", ms))
}
