package main

// Multi-process tests: real lockd daemons on loopback (through
// scripts/cluster.sh), real `lockd run` clients, and a witness owned by the
// test: the test binary itself, re-executed as the critical section. The
// witness appends "enter", a "tick" every millisecond while inside, and
// "exit" to a shared file (O_APPEND, one write per line), so the file's
// order is the real order: nobody but the current holder may write
// between an enter and the next enter.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
	"github.com/roundtable-go/roundtable/pkg/lockd"
	"github.com/roundtable-go/roundtable/pkg/mutex"
	"github.com/roundtable-go/roundtable/pkg/node"
)

var lockdBin string

func TestMain(m *testing.M) {
	if file := os.Getenv("LOCKD_WITNESS"); file != "" {
		witness(file)
		return
	}
	clitest.Main(m, "lockd", &lockdBin)
}

func witness(file string) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		os.Exit(3)
	}
	tok, pid := os.Getenv("LOCKD_TOKEN"), os.Getpid()
	write := func(what string) {
		fmt.Fprintf(f, "%s %s %d %d %d\n", what, tok, pid, time.Now().UnixNano(), os.Getppid())
	}
	hold, _ := time.ParseDuration(os.Getenv("WITNESS_HOLD"))
	if os.Getenv("WITNESS_TRAP") != "" {
		// Record SIGTERM and exit 7: proof the signal reached the command
		// (had lockd run died instead, the command would get SIGKILL).
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		go func() {
			<-sigs
			write("signal")
			os.Exit(7)
		}()
	}
	write("enter")
	for end := time.Now().Add(hold); time.Now().Before(end); {
		time.Sleep(time.Millisecond)
		write("tick")
	}
	write("exit")
	f.Close()
	os.Exit(0)
}

type entry struct {
	what  string
	token uint64
	pid   int
	at    int64
	ppid  int // the lockd run that started this witness
}

func readWitness(t *testing.T, file string) []entry {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e entry
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %d %d %d", &e.what, &e.token, &e.pid, &e.at, &e.ppid); err != nil {
			t.Fatalf("witness line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// checkWitness: after an enter by P, every line until the next enter is
// P's; tokens of successive enters strictly grow. Returns the number of
// critical sections.
func checkWitness(t *testing.T, file string) int {
	t.Helper()
	entries := readWitness(t, file)
	cur, sections := -1, 0
	var last uint64
	for i, e := range entries {
		switch {
		case e.what == "enter":
			if e.token <= last {
				t.Fatalf("line %d: token %d after %d: tokens went backwards", i+1, e.token, last)
			}
			last, cur = e.token, e.pid
			sections++
		case e.pid != cur:
			t.Fatalf("line %d: %s by pid %d (token %d) while pid %d holds the lock: two holders",
				i+1, e.what, e.pid, e.token, cur)
		}
	}
	return sections
}

type cluster struct{ *clitest.Cluster }

func startDaemonsB(b *testing.B) *cluster { return startDaemons(b, 3) }

func startDaemons(t testing.TB, n int, args ...string) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{clitest.StartCluster(t, dir, n, append([]string{lockdBin, "serve", "--no-color",
		"--socket", filepath.Join(dir, "{id}.sock")}, args...)...)}
	// Wait until a coordinator is active: a non-blocking probe succeeds.
	clitest.WaitFor(t, 20*time.Second, func() bool {
		return exec.Command(lockdBin, "run", "--socket", c.sock(1), "--nonblock", "probe", "--", "true").Run() == nil
	})
	return c
}

func (c *cluster) sock(i int) string { return filepath.Join(c.Dir, fmt.Sprintf("%d.sock", i)) }

// hold starts `lockd hold ARGS` through member i with its input kept open
// (closing stdin releases) and returns once it has printed its grant.
func (c *cluster) hold(i int, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	c.T.Helper()
	h := exec.Command(lockdBin, append([]string{"hold", "--socket", c.sock(i)}, args...)...)
	stdin, err := h.StdinPipe()
	if err != nil {
		c.T.Fatal(err)
	}
	stdout, err := h.StdoutPipe()
	if err != nil {
		c.T.Fatal(err)
	}
	if err := h.Start(); err != nil {
		c.T.Fatal(err)
	}
	c.T.Cleanup(func() { h.Process.Kill(); h.Wait() })
	r := bufio.NewReader(stdout)
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, "acquired") {
		c.T.Fatalf("lockd hold: %q %v", line, err)
	}
	return h, stdin, r
}

// client is one `lockd run NAME -- witness`.
type client struct {
	cmd       *exec.Cmd
	call, ret int64
	code      int
	out       strings.Builder
}

func (c *cluster) run(daemon int, witnessFile string, hold time.Duration, extra ...string) *client {
	return c.runEnv(daemon, witnessFile, hold, nil, extra...)
}

func (c *cluster) runEnv(daemon int, witnessFile string, hold time.Duration, env []string, extra ...string) *client {
	return c.runNamed(daemon, "L", witnessFile, hold, env, extra...)
}

// runNamed is runEnv for a lock of another name.
func (c *cluster) runNamed(daemon int, name, witnessFile string, hold time.Duration, env []string, extra ...string) *client {
	self, _ := os.Executable()
	args := append([]string{"run", "--socket", c.sock(daemon), "--kill-grace", "200ms"}, extra...)
	args = append(args, name, "--", self)
	cl := &client{cmd: exec.Command(lockdBin, args...)}
	cl.cmd.Env = append(append(os.Environ(), "LOCKD_WITNESS="+witnessFile, "WITNESS_HOLD="+hold.String()), env...)
	cl.cmd.Stderr = &cl.out
	cl.call = time.Now().UnixNano()
	if err := cl.cmd.Start(); err != nil {
		c.T.Fatal(err)
	}
	return cl
}

// exits waits for the client and fails the test unless it exited with
// want; what names the client in the failure, with its stderr.
func (cl *client) exits(t *testing.T, want int, what string) {
	t.Helper()
	cl.wait()
	if cl.code != want {
		t.Fatalf("%s: exit %d, want %d\n%s", what, cl.code, want, cl.out.String())
	}
}

func (cl *client) wait() {
	err := cl.cmd.Wait()
	cl.ret = time.Now().UnixNano()
	cl.code = cl.cmd.ProcessState.ExitCode()
	if ee, ok := err.(*exec.ExitError); ok && ee.ProcessState.ExitCode() == -1 {
		cl.code = 128 + int(ee.ProcessState.Sys().(syscall.WaitStatus).Signal())
	}
}

// lockModel: a lock with fencing. acquire(c) → token needs the lock free
// and a token above every earlier one; release(c) needs c to hold it.
type lockState struct {
	holder int
	token  uint64
}

type lockOp struct {
	acquire bool
	client  int
}

var lockModel = porcupine.Model{
	Init: func() interface{} { return lockState{holder: -1} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in := state.(lockState), input.(lockOp)
		if in.acquire {
			tok := output.(uint64)
			if s.holder != -1 || tok <= s.token {
				return false, s
			}
			return true, lockState{holder: in.client, token: tok}
		}
		if s.holder != in.client {
			return false, s
		}
		return true, lockState{holder: -1, token: s.token}
	},
}

func TestEightClientsNoOverlapAndLinearizable(t *testing.T) { eachAlgo(t, eightClients) }

// eachAlgo runs test as a subtest for every algorithm lockd serves.
func eachAlgo(t *testing.T, test func(t *testing.T, algo string)) {
	for _, algo := range []string{"central", "ricart-agrawala", "token-ring", "voting"} {
		t.Run(algo, func(t *testing.T) { test(t, algo) })
	}
}

func eightClients(t *testing.T, algo string) {
	c := startDaemons(t, 3, "--algo", algo)
	file := filepath.Join(c.Dir, "witness")
	var clients []*client
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		cl := c.run(1+i%3, file, 20*time.Millisecond)
		clients = append(clients, cl)
		wg.Add(1)
		go func() { defer wg.Done(); cl.wait() }()
	}
	wg.Wait()
	for i, cl := range clients {
		if cl.code != 0 {
			t.Fatalf("client %d exited %d: %s", i, cl.code, cl.out.String())
		}
	}
	if n := checkWitness(t, file); n != 8 {
		t.Fatalf("%d critical sections, want 8", n)
	}
	// Porcupine: acquire = [client start, witness enter], release =
	// [witness exit, client exit].
	byParent := map[int][]entry{}
	for _, e := range readWitness(t, file) {
		byParent[e.ppid] = append(byParent[e.ppid], e)
	}
	var ops []porcupine.Operation
	for i, cl := range clients {
		es := byParent[cl.cmd.Process.Pid]
		if len(es) < 2 || es[0].what != "enter" || es[len(es)-1].what != "exit" {
			t.Fatalf("client %d: witness entries %v", i, es)
		}
		enter, exit := es[0], es[len(es)-1]
		ops = append(ops,
			porcupine.Operation{ClientId: i, Input: lockOp{true, i}, Call: cl.call, Output: enter.token, Return: enter.at},
			porcupine.Operation{ClientId: i, Input: lockOp{false, i}, Call: exit.at, Output: nil, Return: cl.ret})
	}
	if !porcupine.CheckOperations(lockModel, ops) {
		t.Fatal("porcupine: the acquire/release history is not linearizable as a fenced lock")
	}
}

// TestKilledHolder: SIGKILL the `lockd run` holding the lock; its child dies
// with it (no orphan) and the next client gets the lock.
func TestKilledHolder(t *testing.T) {
	c := startDaemons(t, 3, "--algo", "ricart-agrawala")
	file := filepath.Join(c.Dir, "witness")
	holder := c.run(2, file, time.Hour)
	clitest.WaitFor(t, 20*time.Second, func() bool { return len(readWitnessMaybe(file)) > 0 })
	childPid := readWitnessMaybe(file)[0].pid
	next := c.run(3, file, 10*time.Millisecond)
	holder.cmd.Process.Kill()
	holder.wait()
	next.exits(t, 0, "next client")
	clitest.WaitFor(t, 20*time.Second, func() bool { return clitest.Gone(childPid) })
	if n := checkWitness(t, file); n != 2 {
		t.Fatalf("%d critical sections, want 2", n)
	}
}

// TestKilledDaemons: SIGKILL the daemon serving the holder (its client
// loses the lock: exit 76, child stopped), then the coordinator; the
// survivors keep granting, and nobody overlaps.
func TestKilledDaemons(t *testing.T) {
	c := startDaemons(t, 3)
	file := filepath.Join(c.Dir, "witness")
	holder := c.run(1, file, time.Hour)
	clitest.WaitFor(t, 20*time.Second, func() bool { return len(readWitnessMaybe(file)) > 0 })
	c.Ctl("kill", "1")
	holder.exits(t, 76, "holder on a killed daemon")
	cl := c.run(2, file, 10*time.Millisecond)
	cl.exits(t, 0, "client after daemon 1 died")
	c.Ctl("kill", "3") // the coordinator (highest ID)
	cl = c.run(2, file, 10*time.Millisecond, "--timeout", "4s")
	cl.exits(t, 69, "one of three daemons (69: no quorum)")
	c.Ctl("restart", "3")
	cl = c.run(2, file, 10*time.Millisecond, "--timeout", "15s")
	cl.exits(t, 0, "client after the coordinator restarted")
	checkWitness(t, file)
}

// TestPausedDaemon: SIGSTOP the daemon serving the holder. Its client
// notices the lease running out on its own, stops its child and exits 76;
// another client gets the lock only after that.
func TestPausedDaemon(t *testing.T) { eachAlgo(t, pausedDaemon) }

func pausedDaemon(t *testing.T, algo string) {
	c := startDaemons(t, 3, "--algo", algo)
	file := filepath.Join(c.Dir, "witness")
	holder := c.run(1, file, time.Hour)
	clitest.WaitFor(t, 20*time.Second, func() bool { return len(readWitnessMaybe(file)) > 0 })
	next := c.run(2, file, 10*time.Millisecond)
	c.Ctl("pause", "1")
	holder.wait()
	next.wait()
	c.Ctl("resume", "1")
	if holder.code != 76 || !strings.Contains(holder.out.String(), "lease ran out") {
		t.Fatalf("holder under a paused daemon: exit %d: %s", holder.code, holder.out.String())
	}
	if next.code != 0 {
		t.Fatalf("next client: exit %d: %s", next.code, next.out.String())
	}
	if n := checkWitness(t, file); n != 2 {
		t.Fatalf("%d critical sections, want 2", n)
	}
}

func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		says string // in the one line on stderr
	}{
		{[]string{"run", "--socket", "/nonexistent/x.sock", "L", "--", "true"}, 69, "/nonexistent/x.sock"},
		// flags after NAME are read; what follows -- is the command's
		{[]string{"run", "L", "--socket", "/nonexistent/y.sock", "--", "true", "--socket", "z"}, 69, "/nonexistent/y.sock"},
		{[]string{"run", "--socket", "/nonexistent/x.sock"}, 64, "NAME"},
		{[]string{"run", "L", "--timeout", "1", "--", "true"}, 64, "did you mean 1s?"},
		{[]string{"run", "--json", "L", "--", "true"}, 64, "--json"},
		{[]string{"serve", "--id", "1", "--peers", "1=bad"}, 64, "host:port"},
		{[]string{"serve", "--id", "1", "--peers", "1=127.0.0.1:99999"}, 64, "65535"},
		{[]string{"serve", "--id", "1", "--peers", "1=127.0.0.1:7000", "--bind", "127.0.0.1:99999"}, 64, "65535"},
		{[]string{"serve", "--algo", "paxos", "--id", "1", "--peers", "1=127.0.0.1:1"}, 64, "paxos"},
		{[]string{"serve", "--k", "1", "--id", "1", "--peers", "1=127.0.0.1:1,2=127.0.0.1:2"}, 64, "--k is for --algo token-ring"},
		{[]string{"serve", "--algo", "central", "--m", "2", "--id", "1", "--peers", "1=127.0.0.1:1,2=127.0.0.1:2"}, 64, "--m is for --algo voting"},
		{[]string{"serve", "--socket", "/nonexistent/dir/x.sock", "--id", "1", "--peers", "1=127.0.0.1:1", "--bind", "127.0.0.1:0"}, 64, "no directory /nonexistent/dir"},
		{[]string{"ring-k", "--nodes", "10", "--failures", "20"}, 64, ""},
		{[]string{"run", "--timeout", "soon", "L", "--", "true"}, 64, "soon"},
		{[]string{"status", "--jsn"}, 64, "--jsn"},
		{[]string{"--bogus"}, 64, "--bogus"},
		{[]string{"bogus"}, 64, `unknown command "bogus"`},
	} {
		// Usage errors are one line on stderr (no key warning before
		// them); stdout, where a script reads events, stays empty.
		code, stdout, stderr := runLockd(c.args...)
		lines := strings.Count(stderr, "\n")
		if code != c.code || stdout != "" || lines != 1 || !strings.HasPrefix(stderr, "lockd: ") || !strings.Contains(stderr, c.says) {
			t.Errorf("lockd %v: exit %d, stdout %q, stderr %q; want exit %d, nothing on stdout, one line on stderr saying %q",
				c.args, code, stdout, stderr, c.code, c.says)
		}
	}
}

// runLockd runs lockd with args and stdin empty, and returns its exit
// code, stdout and stderr.
func runLockd(args ...string) (code int, stdout, stderr string) {
	var out, errOut strings.Builder
	cmd := exec.Command(lockdBin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), &out, &errOut
	if ee, ok := cmd.Run().(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return code, out.String(), errOut.String()
}

// TestBadNames: names that would make a text line ambiguous (a space) or
// forge one (a newline) are refused by the clients with exit 64, and by
// the daemon, to a client of its own, with an error reply; the connection
// then still serves good names.
func TestBadNames(t *testing.T) {
	c := startDaemons(t, 1)
	// JSON output: a session's answers of every kind, and ring-k.
	session := exec.Command(lockdBin, "session", "--json", "--socket", c.sock(1))
	session.Stdin = strings.NewReader("try x\nacquire x 10ms\nrelease x\nrelease x\nfoo\n")
	out, err := session.Output()
	if err != nil || strings.Count(string(out), "\n") != 5 {
		t.Fatalf("session --json: %v\n%s", err, out)
	}
	clitest.CheckJSON(t, "lockd", out)
	out, err = exec.Command(lockdBin, "ring-k", "--json", "--nodes", "10", "--failures", "2").Output()
	if err != nil {
		t.Fatal(err)
	}
	clitest.CheckJSON(t, "lockd", out)
	for _, name := range []string{"a b", "a\nacquired b token 1", "tab\there", "del\x7f", "nbsp\u00a0x", "\xff"} {
		for _, args := range [][]string{{"run", "--socket", c.sock(1), name, "--", "true"}, {"hold", "--socket", c.sock(1), name}} {
			code, stdout, stderr := runLockd(args...)
			if code != 64 || stdout != "" || !strings.Contains(stderr, "lock name") {
				t.Errorf("lockd %q: exit %d, stdout %q, stderr %q; want exit 64 and a message about the name",
					args, code, stdout, stderr)
			}
		}
	}
	cn, err := cli.DialControl("lockd", c.sock(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	for _, q := range []lockd.Request{{Op: "acquire", Name: "a\nb"}, {Op: "release", Name: "a b"}, {Op: "acquire", Name: ""}} {
		var r lockd.Reply
		if err := cn.Send(q); err != nil {
			t.Fatal(err)
		}
		if err := cn.Next(&r); err != nil || r.Event != "error" || !strings.Contains(r.Error, "lock name") {
			t.Fatalf("%+v: reply %+v, %v; want an error about the name", q, r, err)
		}
	}
	var r lockd.Reply
	if err := cn.Send(lockd.Request{Op: "acquire", Name: "good"}); err != nil {
		t.Fatal(err)
	}
	if err := cn.Next(&r); err != nil || r.Event != "acquired" {
		t.Fatalf("after the refusals: %+v, %v; want acquired", r, err)
	}
}

func readWitnessMaybe(file string) []entry {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []entry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e entry
		if _, err := fmt.Sscanf(line, "%s %d %d %d %d", &e.what, &e.token, &e.pid, &e.at, &e.ppid); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// TestTokenRingKilledDaemon: SIGKILL the daemon whose client is inside,
// which holds the token: its client exits 76 with its child stopped, a
// backup copy on the next daemon becomes the token (Arantes–Sopena's UseBackup),
// and a client waiting on another daemon gets in, with a higher fencing
// token.
func TestTokenRingKilledDaemon(t *testing.T) {
	c := startDaemons(t, 3, "--algo", "token-ring")
	file := filepath.Join(c.Dir, "witness")
	holder := c.run(1, file, time.Hour)
	clitest.WaitFor(t, 20*time.Second, func() bool { return len(readWitnessMaybe(file)) > 0 })
	next := c.run(3, file, 10*time.Millisecond)
	c.Ctl("kill", "1")
	holder.exits(t, 76, "holder on a killed daemon")
	next.exits(t, 0, "client waiting on daemon 3")
	if n := checkWitness(t, file); n != 2 {
		t.Fatalf("%d critical sections, want 2", n)
	}
}

// TestVotingMinority: with two of three daemons SIGKILLed, the last one
// cannot gather m = 2 votes and never grants; with one back, it does.
func TestVotingMinority(t *testing.T) {
	c := startDaemons(t, 3, "--algo", "voting")
	file := filepath.Join(c.Dir, "witness")
	c.Ctl("kill", "1")
	c.Ctl("kill", "2")
	cl := c.run(3, file, 10*time.Millisecond, "--timeout", "3s")
	cl.exits(t, 69, "one of three daemons (69: no quorum)")
	c.Ctl("restart", "2")
	cl = c.run(3, file, 10*time.Millisecond, "--timeout", "15s")
	cl.exits(t, 0, "client with two of three daemons up")
	if n := checkWitness(t, file); n != 1 {
		t.Fatalf("%d critical sections, want 1", n)
	}
}

// TestStoppedHolder: SIGSTOP the `lockd run` holding the lock (its child
// keeps running in its own process group, inside the critical section,
// until its watchdog's deadline: the lease's end plus the kill grace, here
// 5 s, longer than the child's 1.5 s; TestStoppedRunCommandKilledAtDeadline
// has the child outlast it). The lock stays held: a client waiting
// meanwhile does not get in while the holder is stopped; after SIGCONT the
// holder finishes and the waiter follows, with no overlap.
func TestStoppedHolder(t *testing.T) {
	c := startDaemons(t, 3)
	file := filepath.Join(c.Dir, "witness")
	holder := c.run(1, file, 1500*time.Millisecond, "--kill-grace", "5s")
	clitest.WaitFor(t, 20*time.Second, func() bool { return len(readWitnessMaybe(file)) > 0 })
	if err := holder.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	next := c.run(2, file, 10*time.Millisecond)
	// The holder's child exits after 1.5 s; until the holder is resumed,
	// nobody else may enter: the witness shows only the holder's section.
	clitest.WaitFor(t, 20*time.Second, func() bool {
		es := readWitnessMaybe(file)
		return len(es) > 0 && es[len(es)-1].what == "exit"
	})
	for _, e := range readWitnessMaybe(file) {
		if e.what == "enter" && e.ppid != holder.cmd.Process.Pid {
			t.Fatal("a client entered while the holder was stopped")
		}
	}
	if err := holder.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	holder.wait()
	next.wait()
	if holder.code != 0 || next.code != 0 {
		t.Fatalf("holder exit %d (%s), next exit %d (%s)", holder.code, holder.out.String(), next.code, next.out.String())
	}
	if n := checkWitness(t, file); n != 2 {
		t.Fatalf("%d critical sections, want 2", n)
	}
}

// TestStatusIsCurrentOnFollowers: with the central algorithm, `lockd
// status` on a member that is not the coordinator shows the lock table as
// the coordinator has it now — held right after a grant, free right after
// the release — not as of the last ping. The lease is 4 s, so pings are a
// second apart and the pinged copy would almost surely be stale at both
// instants. When the coordinator is gone, status still answers, from the
// last ping, and says so.
func TestStatusIsCurrentOnFollowers(t *testing.T) {
	c := startDaemons(t, 3, "--lease", "4s")
	type status struct {
		Coord     int                `json:"coordinator"`
		Leading   bool               `json:"leading"`
		Locks     []mutex.LockStatus `json:"locks"`
		LocksFrom string             `json:"locks_from"`
	}
	get := func(i int) status {
		out, err := exec.Command(lockdBin, "status", "--json", "--socket", c.sock(i)).Output()
		clitest.CheckJSON(t, "lockd", out)
		var st status
		if err != nil || json.Unmarshal(out, &st) != nil {
			t.Fatalf("status of member %d: %v\n%s", i, err, out)
		}
		return st
	}
	coord, follower := 0, 0
	for i := 1; i <= 3; i++ {
		if get(i).Leading {
			coord = i
		} else {
			follower = i
		}
	}
	if coord == 0 || follower == 0 {
		t.Fatal("no coordinator and follower found")
	}
	// Inside the critical section, ask the follower at once; then again
	// right after. An answer from the pinged copy says so ("last ping": the
	// coordinator did not answer in time, as can happen on a loaded
	// machine) and is retried; a table said to be the coordinator's must
	// be exact.
	answered := 0
	for try := 0; try < 5 && answered < 2; try++ {
		answered = 0
		out, err := exec.Command(lockdBin, "run", "--socket", c.sock(follower), "db", "--",
			lockdBin, "status", "--json", "--socket", c.sock(follower)).Output()
		var inside status
		if err != nil || json.Unmarshal(out, &inside) != nil {
			t.Fatalf("status inside the critical section: %v\n%s", err, out)
		}
		if inside.LocksFrom == "coordinator" {
			answered++
			if len(inside.Locks) != 1 || inside.Locks[0].Name != "db" || inside.Locks[0].Holder != node.ID(follower) {
				t.Fatalf("member %d's status right after its grant: %+v", follower, inside)
			}
		}
		if after := get(follower); after.LocksFrom == "coordinator" {
			answered++
			if len(after.Locks) != 0 {
				t.Fatalf("member %d's status right after the release: %+v", follower, after)
			}
		}
	}
	if answered < 2 {
		t.Fatal("the coordinator never answered a follower's status query")
	}
	// The coordinator dies: until the follower notices, its status names
	// the dead coordinator and must say the table is the pinged copy.
	c.Ctl("kill", strconv.Itoa(coord))
	out, _ := exec.Command(lockdBin, "status", "--json", "--socket", c.sock(follower)).Output()
	var st status
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status with the coordinator dead: %v\n%s", err, out)
	}
	if st.Coord == coord && st.LocksFrom != "last ping" {
		t.Fatalf("member %d's status with coordinator %d dead: %+v", follower, coord, st)
	}
}

// TestStatusListsEveryMembersHolders: with Ricart–Agrawala, the token ring
// and voting each member knows only its own clients' locks; `lockd status`
// on another member lists them too, and names a member that does not
// answer.
func TestStatusListsEveryMembersHolders(t *testing.T) {
	for _, algo := range []string{"ricart-agrawala", "token-ring", "voting"} {
		t.Run(algo, func(t *testing.T) {
			c := startDaemons(t, 3, "--algo", algo)
			type status struct {
				Locks      []mutex.LockStatus `json:"locks"`
				Answered   []node.ID          `json:"answered"`
				Unanswered []node.ID          `json:"unanswered"`
				Down       []node.ID          `json:"down"`
			}
			// A member slow to answer (a loaded machine) is listed as
			// unanswered; retry those rounds, judge the complete ones.
			complete := false
			for try := 0; try < 5 && !complete; try++ {
				out, err := exec.Command(lockdBin, "run", "--socket", c.sock(1), "db", "--",
					lockdBin, "status", "--json", "--socket", c.sock(2)).Output()
				var st status
				if err != nil || json.Unmarshal(out, &st) != nil {
					t.Fatalf("status inside the critical section: %v\n%s", err, out)
				}
				if complete = len(st.Answered) == 3; complete &&
					(len(st.Locks) != 1 || st.Locks[0].Name != "db" || st.Locks[0].Holder != 1) {
					t.Fatalf("member 2's status while member 1's client holds db: %s", out)
				}
			}
			if !complete {
				t.Fatal("members 1 and 3 never both answered member 2's status query")
			}
			c.Ctl("kill", "1")
			out, _ := exec.Command(lockdBin, "status", "--json", "--socket", c.sock(2)).Output()
			var st status
			if json.Unmarshal(out, &st) != nil || !slices.Contains(st.Unanswered, 1) || slices.Contains(st.Answered, 1) {
				t.Fatalf("member 2's status with member 1 dead: %s", out)
			}
			if slices.Contains(st.Down, 1) {
				// Declared dead already (a slow machine): nothing silent to name.
				return
			}
			text, _ := exec.Command(lockdBin, "status", "--socket", c.sock(2)).Output()
			if !strings.Contains(string(text), "no answer from member 1") {
				t.Fatalf("text status does not name the silent member:\n%s", text)
			}
			// Two leases later the failure detector holds member 1 for dead:
			// it is listed as down (and still as unanswered), not asked.
			// The verdict comes from a status asked after the deadline, so a
			// stall of the whole host during the wait (its timers all
			// overdue, run before the query: pkg/driver) fails nothing.
			deadline, asked := time.Now().Add(15*time.Second), false
			for !slices.Contains(st.Down, 1) {
				late := time.Now().After(deadline)
				if late && asked {
					t.Fatalf("member 1 never reported down: %s", out)
				}
				asked = late
				out, _ = exec.Command(lockdBin, "status", "--json", "--socket", c.sock(2)).Output()
				st = status{}
				if json.Unmarshal(out, &st) != nil {
					t.Fatalf("status: %s", out)
				}
			}
			if !slices.Contains(st.Unanswered, 1) || slices.Contains(st.Answered, 1) || slices.Contains(st.Down, 3) {
				t.Fatalf("member 2's status with member 1 down: %s", out)
			}
			text, _ = exec.Command(lockdBin, "status", "--socket", c.sock(2)).Output()
			if !strings.Contains(string(text), "(member 1 down)") {
				t.Fatalf("text status does not say member 1 is down:\n%s", text)
			}
		})
	}
}

// TestHold: `lockd hold` prints the grant, and releases at the end of its
// input (exit 0), on a signal (exit 128+signal) or reports the lock lost
// when its daemon goes away (exit 76), printing the release or the loss.
func TestHold(t *testing.T) {
	c := startDaemons(t, 3)
	out, err := exec.Command(lockdBin, "hold", "--socket", c.sock(1), "db").Output() // stdin: /dev/null
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 2 || !strings.HasPrefix(lines[0], "acquired db token ") ||
		strings.TrimPrefix(lines[1], "released") != strings.TrimPrefix(lines[0], "acquired") {
		t.Fatalf("hold with no input: %v\n%s", err, out)
	}
	h, _, r := c.hold(2, "--json", "db")
	h.Process.Signal(syscall.SIGTERM)
	line, _ := r.ReadString('\n')
	clitest.CheckJSON(t, "lockd", []byte(line))
	rep, perr := parseReply([]byte(line))
	if err := h.Wait(); perr != nil || rep.Event != "released" || rep.Name != "db" || h.ProcessState.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Fatalf("hold after SIGTERM: %q, %v (exit %d)", line, err, h.ProcessState.ExitCode())
	}
	h, _, r = c.hold(3, "db")
	c.Ctl("kill", "3")
	line, _ = r.ReadString('\n')
	if err := h.Wait(); !strings.HasPrefix(line, "lost db token ") || h.ProcessState.ExitCode() != 76 {
		t.Fatalf("hold with its daemon killed: %q, %v (exit %d)", line, err, h.ProcessState.ExitCode())
	}
}

// TestStatusQueuesAcrossMembers: with the algorithms where each member
// knows only its own clients, any member's `lockd status` shows one row per
// lock with the holder and every member's waiting clients, in the order the
// algorithm serves them (mutex.MergeLocks): a hold through member 1, then
// a waiter through member 3, then one through member 2.
func TestStatusQueuesAcrossMembers(t *testing.T) {
	for _, c := range []struct {
		algo  string
		order []node.ID // members of the waiters, in queue order
	}{
		// Lamport stamps: member 3 asked first, member 2's request
		// came after it had seen 3's.
		{"ricart-agrawala", []node.ID{3, 2}},
		// the token goes from the holder's member 1 to 2, then 3
		{"token-ring", []node.ID{2, 3}},
		{"voting", []node.ID{2, 3}}, // no order promised: by member
	} {
		t.Run(c.algo, func(t *testing.T) {
			cl := startDaemons(t, 3, "--algo", c.algo)
			// A lock taken through each member first: a Ricart–Agrawala
			// member sends no request for its first lease (its clock
			// catches up), and this test is about the order after that.
			for i := 1; i <= 3; i++ {
				if out, err := exec.Command(lockdBin, "run", "--socket", cl.sock(i), "probe", "--", "true").CombinedOutput(); err != nil {
					t.Fatalf("lockd run through member %d: %v\n%s", i, err, out)
				}
			}
			_, stdin, _ := cl.hold(1, "db")
			status := func() mutex.LockStatus {
				out, err := exec.Command(lockdBin, "status", "--json", "--socket", cl.sock(2)).Output()
				var st struct {
					Locks []mutex.LockStatus `json:"locks"`
				}
				if err != nil || json.Unmarshal(out, &st) != nil {
					t.Fatalf("status: %v\n%s", err, out)
				}
				for _, l := range st.Locks {
					if l.Name == "db" {
						return l
					}
				}
				return mutex.LockStatus{}
			}
			var waiters []*exec.Cmd
			for _, via := range []int{3, 2} {
				w := exec.Command(lockdBin, "run", "--socket", cl.sock(via), "db", "--", "true")
				if err := w.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { w.Process.Kill(); w.Wait() })
				waiters = append(waiters, w)
				prefix := strconv.Itoa(via) + "/"
				clitest.WaitFor(t, 20*time.Second, func() bool {
					return slices.ContainsFunc(status().Queue, func(q string) bool { return strings.HasPrefix(q, prefix) })
				})
			}
			l := status()
			if l.Holder != 1 || l.Token == 0 || len(l.Queue) != 2 {
				t.Fatalf("member 2's row for db: %+v", l)
			}
			for i, id := range c.order {
				if !strings.HasPrefix(l.Queue[i], strconv.Itoa(int(id))+"/") {
					t.Fatalf("queue %v, want the waiters of members %v in that order", l.Queue, c.order)
				}
			}
			stdin.Close()
			for _, w := range waiters {
				if err := w.Wait(); err != nil {
					t.Fatalf("a waiter after the hold ended: %v", err)
				}
			}
		})
	}
}

// TestSignals: SIGTERM to a `lockd run` reaches its command, whose exit
// code lockd run returns; SIGTERM to one still waiting ends it with
// 128+15 and takes it out of the queue (the lock is free for a new
// client once the holder is gone), and its command never starts.
func TestSignals(t *testing.T) {
	c := startDaemons(t, 3)
	file := filepath.Join(t.TempDir(), "witness")
	holder := c.runEnv(1, file, time.Minute, []string{"WITNESS_TRAP=1"})
	clitest.WaitFor(t, 20*time.Second, func() bool { return len(readWitnessMaybe(file)) > 0 })
	waiter := c.run(2, file, time.Minute)
	clitest.WaitFor(t, 20*time.Second, func() bool {
		out, _ := exec.Command(lockdBin, "status", "--socket", c.sock(2)).Output()
		return strings.Contains(string(out), "queue [")
	})
	if err := waiter.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waiter.exits(t, 128+int(syscall.SIGTERM), "waiting lockd run after SIGTERM")
	if err := holder.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	holder.exits(t, 7, "holding lockd run after SIGTERM (the command's own 7)")
	var whats []string
	for _, e := range readWitness(t, file) {
		if e.what != "tick" {
			whats = append(whats, e.what)
		}
	}
	if strings.Join(whats, " ") != "enter signal" {
		t.Fatalf("witness saw %v, want the holder's enter and signal only", whats)
	}
	if out, err := exec.Command(lockdBin, "run", "--socket", c.sock(3), "--nonblock", "L", "--", "true").CombinedOutput(); err != nil {
		t.Fatalf("lock not free after both clients ended: %v\n%s", err, out)
	}
}

// TestWatchCluster: `lockd watch --cluster` on one member prints the
// grants and releases of every member's clients, each marked with its
// member, a release after its grant with the same token.
func TestWatchCluster(t *testing.T) {
	c := startDaemons(t, 3)
	w := exec.Command(lockdBin, "watch", "--cluster", "--json", "--socket", c.sock(2))
	stdout, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	lines := make(chan lockd.Reply, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if r, err := parseReply(sc.Bytes()); err == nil {
				clitest.CheckJSON(t, "lockd", sc.Bytes())
				lines <- r
			}
		}
		close(lines)
	}()
	// The watch reaches the other members within a moment of starting;
	// take the lock through member 1 until its events show up.
	var acquired lockd.Reply
	deadline := time.After(10 * time.Second)
	for acquired.Event == "" {
		if out, err := exec.Command(lockdBin, "run", "--socket", c.sock(1), "db", "--", "true").CombinedOutput(); err != nil {
			t.Fatalf("lockd run: %v\n%s", err, out)
		}
	drain:
		for {
			select {
			case r := <-lines:
				if r.Node == 1 && r.Event == "acquired" && r.Name == "db" {
					acquired = r
					break drain
				}
			case <-time.After(200 * time.Millisecond):
				break drain
			case <-deadline:
				t.Fatal("no event of member 1's client reached the cluster watcher on member 2")
			}
		}
	}
	await := func(what string, match func(lockd.Reply) bool) lockd.Reply {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case r, ok := <-lines:
				if !ok {
					t.Fatalf("the watcher ended before %s", what)
				}
				if match(r) {
					return r
				}
			case <-timeout:
				t.Fatalf("the watcher never printed %s", what)
			}
		}
	}
	if r := await("member 1's release", func(r lockd.Reply) bool { return r.Node == 1 && r.Name == "db" }); r.Event != "released" || r.Token != acquired.Token {
		t.Fatalf("after %+v the watcher printed %+v, want its release", acquired, r)
	}
	// Member 3's client, and member 2's own.
	for _, m := range []int{3, 2} {
		if out, err := exec.Command(lockdBin, "run", "--socket", c.sock(m), "jobs", "--", "true").CombinedOutput(); err != nil {
			t.Fatalf("lockd run: %v\n%s", err, out)
		}
		await(fmt.Sprintf("member %d's grant", m), func(r lockd.Reply) bool {
			return r.Node == uint32(m) && r.Event == "acquired" && r.Name == "jobs"
		})
	}
}

// parseReply reads one reply line as the daemon writes it.
func parseReply(line []byte) (lockd.Reply, error) {
	var r lockd.Reply
	err := json.Unmarshal(line, &r)
	return r, err
}

// TestChildExitCodes: lockd run exits with its command's own code, 1
// included (which must not read as a usage error).
func TestChildExitCodes(t *testing.T) {
	c := startDaemons(t, 1)
	for _, code := range []int{0, 1, 2, 64, 75, 127} {
		got, _, stderr := runLockd("run", "--socket", c.sock(1), "L", "--", "sh", "-c", fmt.Sprintf("exit %d", code))
		if got != code || stderr != "" {
			t.Errorf("command exiting %d: lockd run exited %d, stderr %q", code, got, stderr)
		}
	}
}

// TestStuckWatcher: a `lockd watch` that stops reading (SIGSTOP) must not
// hold up its member: 3,000 acquire/release pairs through the same member
// all complete, and status still answers (the member once stalled after
// about 280 pairs, its loop blocked writing to the watcher).
func TestStuckWatcher(t *testing.T) {
	c := startDaemons(t, 1)
	ready := filepath.Join(c.Dir, "watch.ready")
	w := exec.Command(lockdBin, "watch", "--socket", c.sock(1), "--ready-file", ready)
	out, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Signal(syscall.SIGCONT); w.Process.Kill(); w.Wait() })
	// Once the ready file is there, the watcher sees the very next grant
	// (what --ready-file promises). From then on it reads nothing more.
	clitest.WaitFor(t, 20*time.Second, func() bool { _, err := os.Stat(ready); return err == nil })
	if code, _, stderr := runLockd("run", "--socket", c.sock(1), "first", "--", "true"); code != 0 {
		t.Fatalf("run of first: %d %s", code, stderr)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, "acquired first") {
		t.Fatalf("the watcher's first line: %q %v", line, err)
	}
	if err := w.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := exec.CommandContext(ctx, lockdBin, "session", "--socket", c.sock(1))
	s.Stdin = strings.NewReader(strings.Repeat("acquire x\nrelease x\n", 3000))
	got, err := s.Output()
	if err != nil || strings.Count(string(got), "\n") != 6000 {
		t.Fatalf("3,000 pairs beside a stopped watcher: %v, %d answers", err, strings.Count(string(got), "\n"))
	}
	if out, err := exec.CommandContext(ctx, lockdBin, "status", "--socket", c.sock(1)).Output(); err != nil {
		t.Fatalf("status beside a stopped watcher: %v\n%s", err, out)
	}
}

// TestClientsEndAgainstPausedDaemon: against a paused member, a wait with
// --timeout ends near its timeout (it once took 604 s), and SIGTERM ends a
// wait without one.
func TestClientsEndAgainstPausedDaemon(t *testing.T) {
	c := startDaemons(t, 3)
	c.Ctl("pause", "1")
	t.Cleanup(func() { c.Ctl("resume", "1") })
	start := time.Now()
	code, _, stderr := runLockd("run", "--socket", c.sock(1), "--timeout", "1s", "L", "--", "true")
	if code != 75 && code != 69 || time.Since(start) > 10*time.Second {
		t.Fatalf("--timeout 1s against a paused member: exit %d after %v: %s", code, time.Since(start), stderr)
	}
	waiter := exec.Command(lockdBin, "run", "--socket", c.sock(1), "L", "--", "true")
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	// The waiter has connected once the paused member's socket holds it.
	clitest.WaitFor(t, 20*time.Second, func() bool {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", waiter.Process.Pid))
		for _, fd := range fds {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", waiter.Process.Pid, fd.Name())); strings.HasPrefix(l, "socket:") {
				return true
			}
		}
		return false
	})
	start = time.Now()
	waiter.Process.Signal(syscall.SIGTERM)
	err := waiter.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+int(syscall.SIGTERM) || time.Since(start) > 5*time.Second {
		t.Fatalf("SIGTERM to a waiting lockd run: %v after %v", err, time.Since(start))
	}
}

// TestCoordinatorDeathKeepsHolders: clients holding locks through the
// other members keep them while the coordinator is SIGKILLed and a new one
// takes over (they once all lost them: exit 76, "lease expired").
func TestCoordinatorDeathKeepsHolders(t *testing.T) {
	// A 3 s lease (the election stays at 200 ms): the margins scale with
	// the lease, and a loaded test machine must not eat them.
	c := startDaemons(t, 3, "--lease", "3s")
	var clients []*client
	for i, m := range []int{1, 2, 1} {
		file := filepath.Join(c.Dir, fmt.Sprintf("witness-%d", i))
		clients = append(clients, c.runNamed(m, fmt.Sprintf("L%d", i), file, 6*time.Second, nil))
		clitest.WaitFor(t, 20*time.Second, func() bool { return len(readWitnessMaybe(file)) > 0 })
	}
	c.Ctl("kill", "3") // the coordinator (highest ID)
	for i, cl := range clients {
		cl.exits(t, 0, fmt.Sprintf("holder %d across the coordinator's death", i))
	}
}

// TestTenThousandLocks: 10,000 locks with 255-byte names held through one
// member stay held over three leases, through renewals, pings and status
// (240 such locks were once all lost at 1.4 s: the coordinator's ping
// outgrew a frame). Renewals, reports and pings go in batches that fit a
// frame; TestCoordinatorDeathKeepsHolders covers the coordinator's death.
func TestTenThousandLocks(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 locks")
	}
	// A slow election and long leases: the property is that the state
	// fits in frames, and a loaded test machine must not turn slowness
	// into failovers. Each held lock has its own lease in the client
	// ("valid" lists lagging locks with their own end). The member renews
	// all its locks with one session renewal per eighth of a lease
	// (pkg/mutex, rule 4), so the coordinator's work does not grow with
	// the locks held, and renews a grant that came late at once
	// (TestCentralLateGrantRenewedAtOnce). The lease is 8 s: beside two
	// busy loops on 2 cores at load 33-58 (other suites running too),
	// 1 s, 2 s and 4 s leases lost a lock in 1 of 1, 5 of 6 and 4 of 5
	// runs, in 9 of those 10 a lock held for seconds and renewed by its
	// session: the coordinator got 0.03-0.08 of a core, and the member's
	// word to the client ("valid", every eighth of a lease) came up to
	// 0.3 s apart, so the daemons were not scheduled for most of a
	// lease. 8 s failed 2 of 3 runs at load 45-75 (a lock ran out; a
	// follower's status without the table) and passes at load 10-20:
	// no lease is safe from a host that schedules the daemons that
	// rarely. Beside four busy loops at load 21-26 (the suite running
	// too), 2 s held 3 of 3, 1 s and 500 ms 2 of 3, 250 ms 0 of 3; with
	// the coordinator's Tick no longer looking at every session-held lock
	// (TestCentralSessionLocksHaveNoTimer), 2 s 3 of 3, 1 s and 500 ms
	// 2 of 3, 250 ms 2 of 3, the coordinator using 30-40% less CPU
	// (0.053 CPU-s/s against 0.085 at 1 s; docs/lockd.md): the losses
	// left are the host's scheduling, not the coordinator's work. At
	// load 10-11 beside the same loops 250 ms held 3 of 3 before and
	// after (0.214 and 0.126 CPU-s/s). The
	// ROUNDTABLE_CPUPROFILE variable profiles the daemons.
	// TENK_LEASE=2s sets another lease, to measure.
	lease := 8 * time.Second
	if v, err := time.ParseDuration(os.Getenv("TENK_LEASE")); err == nil && v > 0 {
		lease = v
	}
	c := startDaemons(t, 3, "--lease", lease.String(), "--election-timeout", "2s", "--heartbeat", "250ms")
	cpu0, frames0, at0 := coordinatorLoad(t, c)
	t.Cleanup(func() { // before the cluster stops; also when the test failed
		cpu1, frames1, at1 := coordinatorLoad(t, c)
		secs := at1.Sub(at0).Seconds()
		t.Logf("coordinator over %.1f s of acquiring and holding 10,000 locks: %.3f CPU-s/s, %.0f frames/s accepted",
			secs, (cpu1-cpu0).Seconds()/secs, float64(max(frames1, frames0)-frames0)/secs) // 0: status did not answer
	})
	var in strings.Builder
	const n = 10000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "acquire %0255d\n", i)
	}
	s := exec.Command(lockdBin, "session", "--socket", c.sock(1))
	stdin, _ := s.StdinPipe()
	stdout, _ := s.StdoutPipe()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Process.Kill(); s.Wait() })
	lines := make(chan string, n)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	go stdin.Write([]byte(in.String()))
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the session ended while %s", what)
			}
			return l
		case <-time.After(60 * time.Second):
			t.Fatalf("no answer within 60 s while %s", what)
		}
		return ""
	}
	for i := 0; i < n; i++ {
		if l := next("acquiring"); !strings.HasPrefix(l, "acquired ") {
			t.Fatalf("answer %d: %s", i, l[max(0, len(l)-80):])
		}
	}
	// Three leases of holding all of them: a loss would be the session's
	// next line, before the answer to the release below.
	time.Sleep(3 * lease) // the observation period, not a synchronisation
	if out, err := exec.Command(lockdBin, "status", "--socket", c.sock(2)).Output(); err != nil || strings.Count(string(out), "\n") < 2 {
		t.Fatalf("status beside 10,000 locks: %v, %d lines", err, strings.Count(string(out), "\n"))
	}
	fmt.Fprintf(stdin, "release %0255d\n", 0)
	if l := next("releasing"); !strings.HasPrefix(l, "released ") {
		t.Fatalf("after three leases: %s", l[max(0, len(l)-60):])
	}
}

// coordinatorLoad reads member 3's (the coordinator's: bully elects the
// highest ID) CPU time so far from /proc and its accepted frames from
// status.
func coordinatorLoad(t *testing.T, c *cluster) (time.Duration, uint64, time.Time) {
	t.Helper()
	at := time.Now()
	pid, _ := os.ReadFile(c.File(3, "pid"))
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%s/stat", strings.TrimSpace(string(pid))))
	if err != nil {
		t.Logf("coordinator's CPU time: %v", err)
		return 0, 0, at
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	ut, _ := strconv.ParseUint(f[11], 10, 64) // utime, stime: fields 14 and 15
	st, _ := strconv.ParseUint(f[12], 10, 64)
	cpu := time.Duration(ut+st) * time.Second / 100 // USER_HZ
	out, _ := exec.Command(lockdBin, "status", "--json", "--socket", c.sock(3)).Output()
	var frames uint64
	if i := strings.Index(string(out), `"accepted":`); i >= 0 {
		rest := string(out[i+len(`"accepted":`):])
		frames, _ = strconv.ParseUint(rest[:strings.IndexAny(rest, ",}")], 10, 64)
	}
	return cpu, frames, at
}

// TestNonBlockingWithoutQuorum: -n on a fresh cluster, before a
// coordinator can grant, and on a member cut off from its quorum, exits
// 69 saying why, never 75 "held by another process" (nobody holds it);
// status shows the quorum.
func TestNonBlockingWithoutQuorum(t *testing.T) {
	dir := t.TempDir()
	c := &cluster{clitest.StartCluster(t, dir, 3, lockdBin, "serve", "--no-color", "--socket", filepath.Join(dir, "{id}.sock"))}
	// From the first moment until the first grant, every answer is 69.
	clitest.WaitFor(t, 20*time.Second, func() bool {
		code, _, stderr := runLockd("run", "--socket", c.sock(1), "-n", "x", "--", "true")
		if code != 0 && (code != 69 || !strings.Contains(stderr, "cannot decide")) {
			t.Fatalf("-n on a fresh cluster: exit %d, %q; want 69 until the first grant", code, stderr)
		}
		return code == 0
	})
	if out, _ := exec.Command(lockdBin, "status", "--socket", c.sock(1)).Output(); !strings.Contains(string(out), "quorum yes") {
		t.Fatalf("status does not show the quorum:\n%s", out)
	}
	c.Ctl("kill", "3")
	c.Ctl("kill", "2")
	clitest.WaitFor(t, 20*time.Second, func() bool {
		out, _ := exec.Command(lockdBin, "status", "--socket", c.sock(1)).Output()
		return strings.Contains(string(out), "quorum no")
	})
	code, _, stderr := runLockd("run", "--socket", c.sock(1), "-n", "x", "--", "true")
	if code != 69 || !strings.Contains(stderr, "cannot decide") {
		t.Fatalf("-n on a member without quorum: exit %d, %q; want 69", code, stderr)
	}
}
