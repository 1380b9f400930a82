package cli

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// resetSlack forgets the lateness this test process's watchdogs reported,
// now and when the test ends: a test that stops a watchdog on purpose
// must not shorten the leases of the tests after it.
func resetSlack(t *testing.T) {
	reset := func() {
		hostSlack.Lock()
		hostSlack.win, hostSlack.logged = lateWindow{}, 0
		hostSlack.Unlock()
	}
	reset()
	t.Cleanup(reset)
}

// TestKillSlackRule: measured timer lateness in, slack and deadline out.
// The slack is the floor until SlackFactor times the worst lateness of
// the window is more; a lateness counts for SlackWindow (give or take a
// bucket) and no longer.
func TestKillSlackRule(t *testing.T) {
	ms := int64(time.Millisecond)
	s := int64(time.Second)
	t0 := 1000 * s // any CLOCK_MONOTONIC reading

	var w lateWindow
	if got := w.recent(t0); got != 0 {
		t.Fatalf("empty window: worst %v, want 0", time.Duration(got))
	}
	w.note(t0, 3*ms)
	w.note(t0+400*ms, 40*ms)
	w.note(t0+2*s, 5*ms)
	w.note(t0+3*s, -7*ms) // early: not a lateness
	for _, tc := range []struct {
		at, worst int64
	}{
		{t0 + 3*s, 40 * ms},
		{t0 + int64(SlackWindow) - 1, 40 * ms},         // still within the window
		{t0 + int64(SlackWindow) + bucketSpan, 5 * ms}, // the 40 ms is forgotten, the 5 ms is not
		{t0 + 2*s + int64(SlackWindow) + bucketSpan, 0},
	} {
		if got := w.recent(tc.at); got != tc.worst {
			t.Errorf("worst at %v: %v, want %v", time.Duration(tc.at-t0), time.Duration(got), time.Duration(tc.worst))
		}
	}

	floor := 20 * ms
	for _, tc := range []struct{ worst, slack int64 }{
		{0, floor},
		{5 * ms, floor},        // 2 × 5 ms is under the floor
		{10 * ms, floor},       // 2 × 10 ms is the floor
		{40 * ms, 80 * ms},     // a starved host: twice its worst
		{319 * ms, 638 * ms},   // the worst kill beside a CPU hog (docs/elect.md)
		{2500 * ms, 5000 * ms}, // no bound: the lease is what gives way
		{-1 * ms, floor},       // never below the floor
		{3 * ms / 2, floor},    // sub-millisecond noise
		{int64(time.Hour), 2 * int64(time.Hour)},
	} {
		if got := slackFor(floor, tc.worst); got != tc.slack {
			t.Errorf("slack with worst lateness %v: %v, want %v", time.Duration(tc.worst), time.Duration(got), time.Duration(tc.slack))
		}
	}

	// Through the wrapper: its watchdogs' reports raise the slack of the
	// deadlines it computes, and the floor is --kill-slack.
	resetSlack(t)
	SetKillSlack(30*time.Millisecond, nil)
	defer SetKillSlack(DefaultKillSlack, nil)
	if got := KillSlack(); got != 30*time.Millisecond {
		t.Fatalf("nothing reported: slack %v, want the floor, 30ms", got)
	}
	noteReported(10 * ms)
	if got := KillSlack(); got != 30*time.Millisecond {
		t.Fatalf("10ms late: slack %v, want the floor, 30ms", got)
	}
	noteReported(120 * ms)
	noteReported(60 * ms) // a later, smaller report does not lower the window's worst
	if got := KillSlack(); got != 240*time.Millisecond {
		t.Fatalf("120ms late: slack %v, want 240ms", got)
	}
	end := time.Now().Add(time.Second)
	if got := end.Add(-KillSlack()); !got.Equal(end.Add(-240 * time.Millisecond)) {
		t.Fatalf("deadline %v before the end, want 240ms", end.Sub(got))
	}
}

// TestKillSlackStoppedWatchdog: a watchdog that the host starves (here:
// stopped for 150 ms) measures it and keeps that much more
// slack, so that when it is stopped again for as long at its deadline the
// command is still dead before the resource's end. The verdict allows the
// scheduling delay this process measured (four times, as
// TestWatchdogLateness does) for its own seeing of the death. Without the
// measured part of the slack (the floor alone) the command dies about
// 100 ms after the resource's end: testdata/mutants/74-cli-kill-slack-floor-only.patch.
func TestKillSlackStoppedWatchdog(t *testing.T) {
	resetSlack(t)
	probe := startProbe()
	defer probe.stop()
	w := PrepareWatch()
	<-w.ready
	if w.err != nil {
		t.Fatal(w.err)
	}
	<-w.guarding
	pid := w.wd.Process.Pid
	defer syscall.Kill(-pid, syscall.SIGKILL)
	const stop = 150 * time.Millisecond
	stopFor := func() {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err == syscall.ESRCH {
			return // the watchdog has fired already
		} else if err != nil {
			t.Fatal(err)
		}
		// A stop is pending until the watchdog runs to take it, and a
		// SIGCONT before then would cancel it: the stop counts from
		// when the watchdog is seen stopped.
		for end := time.Now().Add(10 * time.Second); !stopped(pid) && !exited(pid); time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("the watchdog did not stop within 10 s of SIGSTOP")
			}
		}
		time.Sleep(stop) // the fault: the watchdog gets no CPU for this long
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && err != syscall.ESRCH {
			t.Fatal(err)
		}
	}
	stopFor()
	// The stop made one of its 50 ms sleeps end at least 100 ms late; the
	// watchdog reports that on its next loop.
	for end := time.Now().Add(10 * time.Second); w.readReports() < int64(stop-probeEvery); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the stopped watchdog reported %v of lateness within 10 s, want at least %v", time.Duration(w.readReports()), stop-probeEvery)
		}
	}
	until := time.Now().Add(KillSlack() + 500*time.Millisecond) // the resource's end
	c, err := w.Start([]string{"sleep", "30"}, nil, until)
	if err != nil {
		t.Fatal(err)
	}
	d := c.Deadline()
	if slack := until.Sub(d); slack < 2*(stop-probeEvery) {
		t.Errorf("slack %v after a measured lateness of %v or more, want at least twice that", slack, stop-probeEvery)
	}
	t.Logf("watchdog reported %v of lateness; deadline %v before the resource's end", time.Duration(w.readReports()), until.Sub(d))
	// Stopped again just before its deadline, for as long.
	time.Sleep(time.Until(d.Add(-30 * time.Millisecond)))
	stopFor()
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the command still ran 30 s after its deadline")
	}
	died := time.Now()
	if c.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit code %d, want %d (SIGKILL by the watchdog)", c.ExitCode(), 128+int(syscall.SIGKILL))
	}
	delay := probe.worst(d.Add(-100*time.Millisecond), died)
	if late := died.Sub(until); late > 4*delay {
		t.Fatalf("the command died %v after the resource's end (more than 4 × %v of scheduling delay measured meanwhile): the slack did not cover the watchdog's stop", late, delay)
	}
	t.Logf("seen dead %v before the resource's end (deadline %v before it)", until.Sub(died), until.Sub(d))
	waitGroupGone(t, c.pgid)
}

// stopped reports whether every thread of process pid is stopped (state
// T): a thread that has yet to run to take its stop is not.
func stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		i := bytes.LastIndexByte(b, ')') // pid (comm) state ...
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// exited reports whether process pid has exited (a zombie, or gone): a
// watchdog that fired before its stop took effect.
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// TestKillSlackForgetsWaitStall: a lateness the watchdog measured while
// its command was still waited for (a ticket, a lock) counts for
// SlackWindow like any other, and no longer. A watchdog stopped for 3 s
// while nothing ran, then left alone for more than the window, gets the
// next grant's deadline with the recent slack: a command with a 1 s lease
// starts. The wrapper used to take every report the watchdog had queued
// over the wait as measured at the grant, so a stall from a minute before
// left a 6 s slack and nothing started ("the lease ended before the
// command could start", `ticketd run` waiting out a refound):
// testdata/mutants/75-cli-kill-slack-stale-reports.patch. The lease is
// 1 s plus twice the scheduling delay this process measured over the last
// window, so that a host that is starved now (not a minute ago) does not
// fail the test.
func TestKillSlackForgetsWaitStall(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the slack window (10 s)")
	}
	resetSlack(t)
	probe := startProbe()
	defer probe.stop()
	w := PrepareWatch()
	<-w.ready
	if w.err != nil {
		t.Fatal(w.err)
	}
	<-w.guarding
	pid := w.wd.Process.Pid
	defer syscall.Kill(-pid, syscall.SIGKILL)
	const stall = 3 * time.Second
	stopWatchdog(t, pid, stall)
	// The wait for the grant: nothing reads the watchdog's reports
	// meanwhile (a client waiting on its daemon does not), and the stall
	// leaves the window.
	time.Sleep(SlackWindow + 2*time.Duration(bucketSpan)) // the age the rule is about, not a synchronisation
	margin := 2 * probe.worst(time.Now().Add(-SlackWindow), time.Now())
	until := time.Now().Add(time.Second + margin)
	c, err := w.Start([]string{"sleep", "30"}, nil, until)
	if err != nil {
		t.Fatalf("a %v lease after a %v stall %v ago: %v (kill slack %v)", time.Second+margin, stall, SlackWindow+2*time.Duration(bucketSpan), err, KillSlack())
	}
	defer waitGroupGone(t, c.pgid)
	defer c.Signal(syscall.SIGKILL)
	t.Logf("lease %v; kill slack %v", time.Second+margin, until.Sub(c.Deadline()))
}

// stopWatchdog stops the watchdog pid for d, counted from when it is seen
// stopped (a stop is pending until the process runs to take it, and a
// SIGCONT before then would cancel it).
func stopWatchdog(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err == syscall.ESRCH {
		return // the watchdog has fired already
	} else if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); !stopped(pid) && !exited(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the watchdog did not stop within 10 s of SIGSTOP")
		}
	}
	time.Sleep(d) // the fault: the watchdog gets no CPU for this long
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && err != syscall.ESRCH {
		t.Fatal(err)
	}
}
