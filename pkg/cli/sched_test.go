package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// realtimeHelperEnv makes this test binary a helper process for
// TestRealtime* (TestMain): "on" applies --realtime's policy, "off" does
// not; either way it starts threads before and after, a plain child that
// forks a grandchild, and a leased command under a watchdog, prints their
// PIDs and waits for stdin to close.
const realtimeHelperEnv = "RT_TEST_REALTIME_HELPER"

// startThreads makes the runtime start about n more threads: each
// goroutine holds its own thread and blocks.
func startThreads(n int) {
	for range n {
		started := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(started)
			select {}
		}()
		<-started
	}
}

func realtimeHelper() {
	if os.Getenv(threadsHelperEnv) != "" {
		threadsHelper()
	}
	if os.Getenv(touchHelperEnv) != "" {
		touchHelper()
	}
	mode, ok := os.LookupEnv(realtimeHelperEnv)
	if !ok {
		return
	}
	if mode == "boost" {
		boostHelper()
	}
	if mode == "noperm" { // as nobody: what ApplyRealtime says, and what it leaves
		realtimeOrSay(NewLogger(os.Stdout, "t", slog.LevelInfo, false))
		p, _ := getSched(0)
		fmt.Printf("watchdogs %d policy %d\n", watchdogRT, p)
		os.Exit(0)
	}
	startThreads(3)
	if mode == "on" {
		if err := SetRealtime(RealtimePriority); err != nil {
			fmt.Println("error", err)
			os.Exit(0)
		}
		watchdogRT = WatchdogPriority
	}
	startThreads(3) // these start as normal threads (SCHED_RESET_ON_FORK): the keeper's
	child := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		fmt.Println("error", err)
		os.Exit(0)
	}
	grandchild, _ := bufio.NewReader(out).ReadString('\n')
	leased, err := StartLeased([]string{"sleep", "60"}, nil, time.Now().Add(time.Minute))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(0)
	}
	fmt.Printf("pids %d %d %s %d %d\n", os.Getpid(), child.Process.Pid, strings.TrimSpace(grandchild), leased.watch.wd.Process.Pid, leased.cmd.Process.Pid)
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = syscall.Kill(-child.Process.Pid, syscall.SIGKILL)
	leased.Signal(syscall.SIGKILL)
	<-leased.Done()
	os.Exit(0)
}

// schedOf is a thread's policy (flags included) and priority.
func schedOf(t *testing.T, tid int) (policy, prio int) {
	t.Helper()
	policy, err := getSched(tid)
	if err != nil {
		t.Fatalf("sched_getscheduler(%d): %v", tid, err)
	}
	var p schedParam
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETPARAM, uintptr(tid), uintptr(unsafe.Pointer(&p)), 0); e != 0 {
		t.Fatalf("sched_getparam(%d): %v", tid, e)
	}
	return policy, int(p.priority)
}

// threads lists a process's thread IDs.
func threads(t *testing.T, pid int) []int {
	t.Helper()
	d, err := os.Open(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids
}

// realtimePIDs runs the helper in mode and returns its PIDs: itself, its
// plain child, that child's child, the watchdog, the leased command; stop
// ends it.
func realtimePIDs(t *testing.T, mode string) (pids []int, stop func()) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := exec.Command(self, "-test.run", "^$")
	h.Env = append(os.Environ(), realtimeHelperEnv+"="+mode)
	h.Stderr = os.Stderr
	in, _ := h.StdinPipe()
	out, _ := h.StdoutPipe()
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() { in.Close(); _ = h.Wait() }
	line, _ := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if len(f) > 0 && f[0] == "error" {
		stop()
		if strings.Contains(line, "operation not permitted") {
			t.Skipf("realtime scheduling is not permitted here (%s): run as root or with CAP_SYS_NICE or RLIMIT_RTPRIO ≥ %d to test it", strings.TrimSpace(line), WatchdogPriority)
		}
		t.Fatalf("helper: %s", line)
	}
	if len(f) != 6 || f[0] != "pids" {
		stop()
		t.Fatalf("helper said %q", line)
	}
	for _, s := range f[1:] {
		p, err := strconv.Atoi(s)
		if err != nil {
			stop()
			t.Fatalf("helper said %q", line)
		}
		pids = append(pids, p)
	}
	return pids, stop
}

// TestRealtimeEveryThreadNotChildren: SetRealtime puts every thread of the
// process under SCHED_RR|SCHED_RESET_ON_FORK, those started before it and,
// through the keeper, those started after; the watchdog of a leased
// command runs under SCHED_RR at WatchdogPriority; the commands (a plain
// child, its own child, the leased command) run as normal processes.
// Planted bugs: testdata/mutants/81-cli-realtime-inherited-by-commands.patch
// (no SCHED_RESET_ON_FORK), 82-cli-realtime-first-thread-only.patch,
// 83-cli-realtime-watchdog-normal.patch.
func TestRealtimeEveryThreadNotChildren(t *testing.T) {
	pids, stop := realtimePIDs(t, "on")
	defer stop()
	self, child, grandchild, watchdog, leased := pids[0], pids[1], pids[2], pids[3], pids[4]
	for _, tid := range threads(t, watchdog) {
		if p, prio := schedOf(t, tid); p&^schedResetOnFork != schedRR || prio != WatchdogPriority {
			t.Errorf("watchdog %d thread %d: policy %#x priority %d, want SCHED_RR priority %d", watchdog, tid, p, prio, WatchdogPriority)
			break
		}
	}
	for what, pid := range map[string]int{"child": child, "grandchild": grandchild, "leased command": leased} {
		if p, prio := schedOf(t, pid); p != schedOther || prio != 0 {
			t.Errorf("%s %d: policy %#x priority %d, want SCHED_OTHER: the user's command must not run realtime", what, pid, p, prio)
		}
	}
	want := schedRR | schedResetOnFork
	// Threads started after SetRealtime are taken within milliseconds
	// (the keeper's first looks); the bound is realtimeRescan ten times
	// over, for a busy host.
	deadline := time.Now().Add(10 * realtimeRescan)
	for {
		var normal []string
		tids := threads(t, self)
		for _, tid := range tids {
			if p, prio := schedOf(t, tid); p != want || prio != RealtimePriority {
				normal = append(normal, fmt.Sprintf("%d (policy %#x priority %d)", tid, p, prio))
			}
		}
		if len(normal) == 0 {
			t.Logf("all %d threads under SCHED_RR|SCHED_RESET_ON_FORK priority %d", len(tids), RealtimePriority)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d threads not under SCHED_RR|SCHED_RESET_ON_FORK priority %d after %v: %v", len(normal), len(tids), RealtimePriority, 10*realtimeRescan, normal)
		}
		time.Sleep(realtimeRescan / 10) // polls the keeper's progress; the verdict is the deadline's
	}
	if chrt, err := exec.LookPath("chrt"); err == nil {
		out, _ := exec.Command(chrt, "-p", strconv.Itoa(self)).CombinedOutput()
		if !strings.Contains(string(out), "SCHED_RR|SCHED_RESET_ON_FORK") {
			t.Errorf("chrt -p %d: %s", self, out)
		}
		out, _ = exec.Command(chrt, "-p", strconv.Itoa(leased)).CombinedOutput()
		if !strings.Contains(string(out), "SCHED_OTHER") {
			t.Errorf("chrt -p %d (the leased command): %s", leased, out)
		}
	}
}

// TestRealtimeNotPermitted: a process that may not use realtime scheduling
// (here nobody, with RLIMIT_RTPRIO 0) says so in one INFO line naming the
// cause and the way out, does not ask its watchdogs for it, and runs on
// as a normal process.
func TestRealtimeNotPermitted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as nobody")
	}
	cmd, _ := asNobody(t, "rt-noperm", 0o755)
	cmd.Args = append(cmd.Args, "-test.run", "^$")
	cmd.Env = append(os.Environ(), realtimeHelperEnv+"=noperm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper as nobody: %v\n%s", err, out)
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(14, &rl) == nil && rl.Cur >= WatchdogPriority {
		t.Skipf("RLIMIT_RTPRIO is %d here: nobody may use realtime scheduling", rl.Cur)
	}
	s := string(out)
	if strings.Count(s, "INFO") != 1 || !strings.Contains(s, "realtime scheduling is off") ||
		!strings.Contains(s, "operation not permitted") || !strings.Contains(s, "LimitRTPRIO=2") {
		t.Errorf("want one INFO line saying realtime scheduling is off, why and how to allow it:\n%s", s)
	}
	if !strings.Contains(s, "watchdogs 0 policy 0") {
		t.Errorf("want no realtime watchdogs and SCHED_OTHER after the refusal:\n%s", s)
	}
}

// TestRealtimeOff: without SetRealtime (--realtime=false) the process, its
// watchdog and its commands all stay SCHED_OTHER.
func TestRealtimeOff(t *testing.T) {
	pids, stop := realtimePIDs(t, "off")
	defer stop()
	for i, pid := range pids {
		for _, tid := range threads(t, pid) {
			if p, prio := schedOf(t, tid); p != schedOther || prio != 0 {
				t.Errorf("process %d (%d of the helper's) thread %d: policy %#x priority %d, want SCHED_OTHER", pid, i, tid, p, prio)
			}
		}
	}
}

// threadsHelperEnv makes this test binary a command with threads and a
// child in its own process group: it starts a few threads and `sleep`,
// prints "cmd PID SLEEPPID" and blocks until killed.
const threadsHelperEnv = "RT_TEST_THREADS_HELPER"

func threadsHelper() {
	startThreads(3)
	sl := exec.Command("sleep", "600")
	if err := sl.Start(); err != nil {
		fmt.Println("error", err)
		os.Exit(0)
	}
	fmt.Printf("cmd %d %d\n", os.Getpid(), sl.Process.Pid)
	select {}
}

// boostHelper is the helper in mode "boost": under --realtime's
// scheduling it runs the threads helper as a leased command, prints
// "pids SELF WATCHDOG COMMAND", and when a line comes on stdin moves the
// lease's end to now (the watchdog fires at once); it prints "done CODE"
// when the command has ended, and exits when stdin closes.
func boostHelper() {
	if err := SetRealtime(RealtimePriority); err != nil {
		fmt.Println("error", err)
		os.Exit(0)
	}
	watchdogRT = WatchdogPriority
	self, _ := os.Executable()
	c, err := StartLeased([]string{self, "-test.run", "^$"}, []string{threadsHelperEnv + "=1"}, time.Now().Add(time.Hour))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(0)
	}
	fmt.Printf("pids %d %d %d\n", os.Getpid(), c.watch.wd.Process.Pid, c.cmd.Process.Pid)
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		c.Stop(0)
		os.Exit(0)
	}
	c.Extend(time.Now())
	<-c.Done()
	fmt.Printf("done %d\n", c.ExitCode())
	_, _ = io.Copy(io.Discard, in)
	os.Exit(0)
}

// freezer is a cgroup v1 freezer group of this test's: its frozen tasks
// do not run, even once SIGKILLed, until thawed, so a test can look at a
// killed task before it exits, with no race against its exit.
type freezer struct {
	t   *testing.T
	dir string
}

// newFreezer makes one, or skips the test where there is none (no cgroup
// v1 freezer, or not root).
func newFreezer(t *testing.T) *freezer {
	t.Helper()
	const root = "/sys/fs/cgroup/freezer"
	if _, err := os.Stat(root + "/tasks"); err != nil {
		t.Skipf("needs the cgroup v1 freezer (%s) to hold killed tasks before they exit: %v", root, err)
	}
	dir := fmt.Sprintf("%s/roundtable-test-%d-%s", root, os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("needs a group of the cgroup v1 freezer to hold killed tasks before they exit (root): %v", err)
	}
	f := &freezer{t, dir}
	t.Cleanup(f.remove)
	return f
}

func (f *freezer) write(file, s string) {
	f.t.Helper()
	if err := os.WriteFile(f.dir+"/"+file, []byte(s), 0o644); err != nil {
		f.t.Fatalf("%s/%s: %v", f.dir, file, err)
	}
}

// add moves processes (all their threads) into the group.
func (f *freezer) add(pids ...int) {
	f.t.Helper()
	for _, p := range pids {
		f.write("cgroup.procs", strconv.Itoa(p))
	}
}

// freeze freezes the group and waits until every task in it is frozen.
func (f *freezer) freeze() {
	f.t.Helper()
	f.write("freezer.state", "FROZEN")
	for deadline := time.Now().Add(time.Minute); ; {
		b, _ := os.ReadFile(f.dir + "/freezer.state")
		if strings.TrimSpace(string(b)) == "FROZEN" {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("freezer still %q after a minute", b)
		}
		time.Sleep(10 * time.Millisecond) // polls the kernel's progress; the verdict is the state read
	}
}

func (f *freezer) thaw() { _ = os.WriteFile(f.dir+"/freezer.state", []byte("THAWED"), 0o644) }

// remove thaws the group, kills what is left in it and removes it.
func (f *freezer) remove() {
	f.thaw()
	for deadline := time.Now().Add(time.Minute); ; {
		b, _ := os.ReadFile(f.dir + "/cgroup.procs")
		pids := strings.Fields(string(b))
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			if n, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
		if time.Now().After(deadline) {
			f.t.Errorf("freezer group %s still holds %v", f.dir, pids)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = os.Remove(f.dir)
}

// startThreadsCommand starts this test binary as the threads helper in
// process group pgid (0: its own) and returns its PID and its sleep's.
func startThreadsCommand(t *testing.T, pgid int) (cmd *exec.Cmd, sleep int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(self, "-test.run", "^$")
	cmd.Env = append(os.Environ(), threadsHelperEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGKILL}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	var a, b int
	if n, _ := fmt.Sscanf(line, "cmd %d %d", &a, &b); n != 2 || a != cmd.Process.Pid {
		t.Fatalf("threads helper said %q", line)
	}
	return cmd, b
}

// wantSched checks every thread of pid for policy and priority.
func wantSched(t *testing.T, what string, pid, policy, prio int) {
	t.Helper()
	for _, tid := range threads(t, pid) {
		if p, pr := schedOf(t, tid); p != policy || pr != prio {
			t.Errorf("%s %d thread %d: policy %#x priority %d, want %#x priority %d", what, pid, tid, p, pr, policy, prio)
		}
	}
}

// TestBoostKilledGroup: boostKilled puts every thread of every process of
// the group that was SIGKILLed (held by the freezer before it can exit)
// under SCHED_RR|SCHED_RESET_ON_FORK at RealtimePriority, and leaves a
// process of the group that was not killed (it still runs user code)
// and a killed process of another group as they were.
// Planted bug: testdata/mutants/86-cli-boost-not-dying.patch (boosts
// whatever is in the group, killed or not).
func TestBoostKilledGroup(t *testing.T) {
	fz := newFreezer(t)
	defer fz.thaw() // before the cleanups, which wait for processes to end
	a, b := startThreadsCommand(t, 0)
	pg := a.Process.Pid
	alive, _ := startThreadsCommand(t, pg) // in the group, not killed
	other, otherSleep := startThreadsCommand(t, 0)
	fz.add(pg, b, alive.Process.Pid, other.Process.Pid, otherSleep)
	fz.freeze()
	if len(threads(t, pg)) < 4 {
		t.Fatalf("the command has %d threads, want several", len(threads(t, pg)))
	}
	for _, p := range []int{pg, b, other.Process.Pid, otherSleep} {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	// May this process set realtime scheduling on another at all (root in
	// a cgroup without realtime runtime may not)? Asked of a process of
	// its own, none of the above.
	probe := exec.Command("sleep", "600")
	if err := probe.Start(); err != nil {
		t.Fatal(err)
	}
	err := setSched(probe.Process.Pid, realtimePolicy, RealtimePriority)
	_ = probe.Process.Kill()
	_ = probe.Wait()
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("this process may not set realtime scheduling on others: %v", err)
	}
	n := boostKilled(pg)
	want := len(threads(t, pg)) + len(threads(t, b))
	if n != want {
		t.Errorf("boostKilled changed %d threads, want %d (those of the killed command and its sleep)", n, want)
	}
	wantSched(t, "killed command", pg, realtimePolicy, RealtimePriority)
	wantSched(t, "killed command's sleep", b, realtimePolicy, RealtimePriority)
	wantSched(t, "live process of the group (not killed)", alive.Process.Pid, schedOther, 0)
	wantSched(t, "killed process of another group", other.Process.Pid, schedOther, 0)
	wantSched(t, "killed process of another group", otherSleep, schedOther, 0)
}

// TestWatchdogBoostsKilledCommand: under realtime scheduling, a watchdog
// that kills its command's group at the deadline gives every task of it
// the CPU to die: once the watchdog has done, the command's threads and
// its child (held by the freezer, killed, not yet exited) run under
// SCHED_RR|SCHED_RESET_ON_FORK, and when they are thawed they die of the
// SIGKILL (the supervisor reports 137).
// Planted bug: testdata/mutants/85-cli-watchdog-kills-without-boost.patch.
func TestWatchdogBoostsKilledCommand(t *testing.T) {
	fz := newFreezer(t)
	defer fz.thaw() // before the cleanups, which wait for processes to end
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := exec.Command(self, "-test.run", "^$")
	h.Env = append(os.Environ(), realtimeHelperEnv+"=boost")
	h.Stderr = os.Stderr
	in, _ := h.StdinPipe()
	out, _ := h.StdoutPipe()
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = h.Wait() }()
	r := bufio.NewReader(out)
	var wd, cmd, sleep int
	for wd == 0 || sleep == 0 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("helper: %v", err)
		}
		var x int
		switch f := strings.Fields(line); {
		case len(f) > 0 && f[0] == "error":
			if strings.Contains(line, "operation not permitted") {
				t.Skipf("realtime scheduling is not permitted here (%s): run as root or with CAP_SYS_NICE or RLIMIT_RTPRIO ≥ %d to test it", strings.TrimSpace(line), WatchdogPriority)
			}
			t.Fatalf("helper: %s", line)
		case len(f) > 0 && f[0] == "pids":
			fmt.Sscanf(line, "pids %d %d %d", &x, &wd, &cmd)
		case len(f) > 0 && f[0] == "cmd":
			fmt.Sscanf(line, "cmd %d %d", &x, &sleep)
		default:
			t.Fatalf("helper said %q", line)
		}
	}
	fz.add(cmd, sleep)
	fz.freeze()
	wantSched(t, "command before its deadline", cmd, schedOther, 0)
	fmt.Fprintln(in, "now") // the lease ends now: the watchdog fires
	// The watchdog kills, boosts, then exits: once it has, look.
	for deadline := time.Now().Add(time.Minute); ; {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", wd))
		if st, ok := parseStat(b); err != nil || ok && (st.state == 'Z' || st.state == 'X') {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watchdog %d did not fire within a minute of its deadline", wd)
		}
		time.Sleep(5 * time.Millisecond) // polls the watchdog's end; the verdict is the policies below
	}
	wantSched(t, "killed command", cmd, realtimePolicy, RealtimePriority)
	wantSched(t, "killed command's sleep", sleep, realtimePolicy, RealtimePriority)
	fz.thaw()
	line, _ := r.ReadString('\n')
	if strings.TrimSpace(line) != fmt.Sprintf("done %d", 128+int(syscall.SIGKILL)) {
		t.Errorf("helper said %q, want the command killed by SIGKILL", line)
	}
}

// BenchmarkBoostKilledScan is the cost of boostKilled's pass over /proc
// for a group with no process left in it: what a kill pays on top, one
// stat read per process on the host (docs/performance.md gives it with
// many processes).
func BenchmarkBoostKilledScan(b *testing.B) {
	d, _ := os.ReadDir("/proc")
	procs := 0
	for _, e := range d {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			procs++
		}
	}
	b.ReportMetric(float64(procs), "procs")
	for b.Loop() {
		boostKilled(1 << 30)
	}
}
