package cli

import (
	"bufio"
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
	mode, ok := os.LookupEnv(realtimeHelperEnv)
	if !ok {
		return
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
