package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestChildExitCodes(t *testing.T) {
	c, err := StartChild([]string{"sh", "-c", "exit 3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if c.ExitCode() != 3 {
		t.Fatalf("exit code %d", c.ExitCode())
	}
	if _, err := StartChild([]string{"no-such-command-xyz"}, nil); Code(err) != ExitNotFound {
		t.Fatalf("missing command: %v (code %d)", err, Code(err))
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "noexec"), []byte("#!/bin/sh\n"), 0o644)
	if _, err := StartChild([]string{filepath.Join(dir, "noexec")}, nil); Code(err) != ExitCannotExec {
		t.Fatalf("non-executable: %v (code %d)", err, Code(err))
	}
}

func TestChildStopEscalates(t *testing.T) {
	// A child that ignores SIGTERM is killed after the grace period.
	ready := filepath.Join(t.TempDir(), "ready")
	c, err := StartChild([]string{"sh", "-c", "trap '' TERM; touch " + ready + "; while :; do sleep 0.05; done"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := os.Stat(ready); err != nil; _, err = os.Stat(ready) {
		time.Sleep(5 * time.Millisecond) // polling for the child's own signal, not a timing guess
	}
	start := time.Now()
	c.Stop(200 * time.Millisecond)
	if c.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit code %d, want %d", c.ExitCode(), 128+int(syscall.SIGKILL))
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Fatal("SIGKILL before the grace period")
	}
	// A cooperative child exits on SIGTERM with 128+15.
	c, _ = StartChild([]string{"sleep", "10"}, []string{"X=1"})
	c.Stop(5 * time.Second)
	if c.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit code %d", c.ExitCode())
	}
}

func ExampleCode() {
	err := Exitf(ExitBusy, "db is held by another process")
	fmt.Println(Code(err), err)
	fmt.Println(Code(nil), Code(fmt.Errorf("plain")))
	// Output:
	// 75 db is held by another process
	// 0 1
}

// TestChildPath: commands are found as exec.LookPath finds them; one found
// only through a relative $PATH entry is refused, not run from here.
func TestChildPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(filepath.Join(bin, "tool"), 0o755) // a directory named like the command
	os.WriteFile(filepath.Join(bin, "plain"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\nexit 4\n"), 0o755)
	t.Setenv("PATH", bin+":"+dir)
	c, err := StartChild([]string{"tool"}, nil)
	if err != nil {
		t.Fatalf("tool: %v (a directory of that name must be passed over)", err)
	}
	<-c.Done()
	if c.ExitCode() != 4 {
		t.Fatalf("tool exit code %d", c.ExitCode())
	}
	if _, err := StartChild([]string{"plain"}, nil); Code(err) != ExitNotFound {
		t.Fatalf("a file without execute bits: %v", err)
	}
	t.Chdir(dir)
	t.Setenv("PATH", bin+"::/nonexistent")
	if _, err := StartChild([]string{"tool"}, nil); Code(err) != ExitCannotExec {
		t.Fatalf("found through an empty PATH entry: %v (code %d)", err, Code(err))
	}
}

// warm starts the watchdog for the next StartLeased and waits until it
// runs: a lease shorter than a watchdog's start-up on a loaded host would
// end before the command could start (Watch.Start waits for it).
func warm(t *testing.T) {
	t.Helper()
	WarmWatch()
	spareMu.Lock()
	w := spare
	spareMu.Unlock()
	<-w.ready
	if w.err != nil {
		t.Fatal(w.err)
	}
	<-w.guarding
}

// TestLeasedChildDiesAtDeadline: a leased command that nobody extends is
// killed (SIGKILL, with everything in its group) once its deadline has
// passed, and not before; its watchdog goes with it.
func TestLeasedChildDiesAtDeadline(t *testing.T) {
	warm(t)
	until := time.Now().Add(300*time.Millisecond + KillSlack())
	c, err := StartLeased([]string{"sh", "-c", "sleep 30 & sleep 30"}, nil, until)
	if err != nil {
		t.Fatal(err)
	}
	killedAtDeadline(t, c, until)
}

// killedAtDeadline checks that a leased command was killed (SIGKILL, with
// everything in its group) once its deadline had passed (the resource's
// end, until, less the kill slack), and not before.
func killedAtDeadline(t *testing.T, c *Child, until time.Time) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("leased child still running 10 s after its deadline")
	}
	d := c.Deadline()
	if now := time.Now(); now.Before(d) {
		t.Fatalf("killed %v before its deadline", d.Sub(now))
	}
	if s := until.Sub(d); s < DefaultKillSlack {
		t.Fatalf("deadline %v before the resource's end, less than the kill slack's floor %v", s, DefaultKillSlack)
	}
	if c.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit code %d, want %d (SIGKILL)", c.ExitCode(), 128+int(syscall.SIGKILL))
	}
	waitGroupGone(t, c.pgid)
}

// TestPreparedWatch: a watchdog started before its deadline is known
// waits without firing for as long as it takes (here longer than the
// lease it is then given), leaves when cancelled, and once armed keeps
// the deadline it was given.
func TestPreparedWatch(t *testing.T) {
	unused := PrepareWatch()
	<-unused.ready
	if unused.err != nil {
		t.Fatal(unused.err)
	}
	unused.Cancel()
	waitGroupGone(t, unused.wd.Process.Pid)

	w := PrepareWatch()
	<-w.ready
	time.Sleep(400 * time.Millisecond) // the fault: a slow ticket; the watchdog must not fire meanwhile
	if err := syscall.Kill(-w.wd.Process.Pid, 0); err != nil {
		t.Fatalf("an unarmed watchdog left: %v", err)
	}
	until := time.Now().Add(300*time.Millisecond + KillSlack())
	c, err := w.Start([]string{"sleep", "30"}, nil, until)
	if err != nil {
		t.Fatal(err)
	}
	killedAtDeadline(t, c, until)
}

// waitGroupGone waits until no process is left in group pgid.
func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); syscall.Kill(-pgid, 0) == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("process group %d still has members", pgid)
		}
	}
}

// TestLeasedChildExtended: a command whose deadline keeps moving runs on;
// signals reach it and not the watchdog; when it exits by itself, the
// watchdog clears its group and leaves. A kill is a failure only if the
// watchdog fired before the deadline of an extension this process had
// written by then (with the slack the watchdog measured itself): a host
// that keeps this process from extending for more than the lease's 100 ms
// ends the lease rightly, and the attempt is made again (up to five).
func TestLeasedChildExtended(t *testing.T) {
	type ext struct {
		wrote     time.Time // after the write: the watchdog could read it from before then
		end       time.Time // the resource's end sent
		slackSent int64
	}
	for attempt := 1; ; attempt++ {
		warm(t)
		until := time.Now().Add(100*time.Millisecond + KillSlack())
		c, err := StartLeased([]string{"sh", "-c", "trap 'exit 7' TERM; while :; do sleep 0.01; done"}, nil, until)
		if err != nil {
			t.Fatal(err)
		}
		sent := []ext{{time.Now(), until, c.slack.Load()}}
		killed := false
		for i := 0; i < 30 && !killed; i++ { // 600 ms, six times the lease
			until := time.Now().Add(100*time.Millisecond + KillSlack())
			c.Extend(until)
			sent = append(sent, ext{time.Now(), until, c.slack.Load()})
			select {
			case <-c.Done():
				killed = true
			case <-time.After(20 * time.Millisecond):
			}
		}
		if !killed {
			c.Extend(time.Now().Add(time.Hour))
			c.Signal(syscall.SIGTERM)
			<-c.Done()
			if c.ExitCode() != 7 {
				t.Fatalf("exit code %d, want 7 from the command's TERM trap", c.ExitCode())
			}
			waitGroupGone(t, c.pgid)
			return
		}
		fired := c.Fired()
		if fired.IsZero() {
			t.Fatalf("killed while its deadline was being extended (exit %d), and the watchdog did not say it fired", c.ExitCode())
		}
		// The last extension certainly written before the watchdog
		// fired, and the deadline the watchdog kept for it.
		last := sent[0]
		for _, e := range sent {
			if e.wrote.Before(fired) {
				last = e
			}
		}
		worst := c.watch.readReports()
		deadline := last.end.Add(-time.Duration(max(last.slackSent, slackFor(0, worst))))
		if fired.Before(deadline) {
			t.Fatalf("killed while its deadline was being extended (exit %d): fired %v before the deadline of an extension written before it",
				c.ExitCode(), deadline.Sub(fired))
		}
		waitGroupGone(t, c.pgid)
		if attempt == 5 {
			t.Skipf("the host kept this process from extending the lease in time in %d attempts", attempt)
		}
		t.Logf("attempt %d: the lease ran out (fired %v after its deadline): this process extended it late", attempt, fired.Sub(deadline))
	}
}

// TestLeasedWatchdogStarved: a watchdog that could not run past the
// deadline (stopped here; starved of CPU or slow to start in practice)
// still honours the extension its supervisor wrote before the deadline:
// it reads what is waiting before it looks at the clock.
func TestLeasedWatchdogStarved(t *testing.T) {
	resetSlack(t) // the stop below is not the host's lateness: later tests must not pay for it
	warm(t)
	c, err := StartLeased([]string{"sh", "-c", "trap 'exit 7' TERM; while :; do sleep 0.01; done"}, nil, time.Now().Add(200*time.Millisecond+KillSlack()))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(c.pgid, syscall.SIGSTOP); err != nil { // the watchdog leads the group
		t.Fatal(err)
	}
	c.Extend(time.Now().Add(time.Hour))
	time.Sleep(400 * time.Millisecond) // the first deadline passes while the watchdog is stopped
	if err := syscall.Kill(c.pgid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
		t.Fatalf("killed though its deadline had been moved in time (exit %d)", c.ExitCode())
	case <-time.After(300 * time.Millisecond):
	}
	c.Signal(syscall.SIGTERM)
	<-c.Done()
	if c.ExitCode() != 7 {
		t.Fatalf("exit code %d, want 7 from the command's TERM trap", c.ExitCode())
	}
	waitGroupGone(t, c.pgid)
}

// TestLeaseOverBeforeStart: a deadline already past starts nothing.
func TestLeaseOverBeforeStart(t *testing.T) {
	c, err := StartLeased([]string{"sleep", "30"}, nil, time.Now().Add(-time.Second))
	if err == nil {
		<-c.Done() // the watchdog fired before the command joined: it must be gone at once
		if c.ExitCode() != 128+int(syscall.SIGKILL) {
			t.Fatalf("a command started after its deadline exited %d", c.ExitCode())
		}
		return
	}
	if err != ErrLeaseOver {
		t.Fatalf("err %v, want ErrLeaseOver", err)
	}
}

// TestChildGroupSwept: what a command leaves running in its process group
// (a shell's background job, which ignores the SIGINT that ends the shell)
// is ended and reaped before Done: with and without a lease, whether the
// command exits by itself or by a forwarded signal.
func TestChildGroupSwept(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leased bool
		script string
		signal bool
	}{
		{"signalled", false, "sleep 30 & echo $! > $0.tmp && mv $0.tmp $0; wait", true},
		{"exited", false, "sleep 30 & echo $! > $0.tmp && mv $0.tmp $0; while [ -e $0 ]; do sleep 0.01; done", false},
		{"leased-signalled", true, "sleep 30 & echo $! > $0.tmp && mv $0.tmp $0; wait", true},
		{"leased-exited", true, "sleep 30 & echo $! > $0.tmp && mv $0.tmp $0; while [ -e $0 ]; do sleep 0.01; done", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			args := []string{"sh", "-c", tc.script, pidFile}
			var c *Child
			var err error
			if tc.leased {
				c, err = StartLeased(args, nil, time.Now().Add(time.Hour))
			} else {
				c, err = StartChild(args, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			var b []byte
			for b, err = os.ReadFile(pidFile); err != nil; b, err = os.ReadFile(pidFile) {
				time.Sleep(5 * time.Millisecond) // polling for the child's own signal, not a timing guess
			}
			var job int
			fmt.Sscan(string(b), &job)
			t.Cleanup(func() { syscall.Kill(job, syscall.SIGKILL) })
			if tc.signal {
				c.Signal(syscall.SIGINT)
			} else {
				os.Remove(pidFile) // the command exits by itself
			}
			select {
			case <-c.Done():
			case <-time.After(time.Minute):
				t.Fatal("the command and its group did not end within a minute")
			}
			if err := syscall.Kill(job, 0); err != syscall.ESRCH {
				st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", job))
				out, _ := exec.Command("ps", "-o", "pid,ppid,pgid,stat,cmd", "-g", fmt.Sprint(c.pgid)).CombinedOutput()
				t.Logf("job stat %s\n%s", st, out)
				t.Fatalf("background job %d outlived its command (kill 0: %v)", job, err)
			}
		})
	}
}

// TestLeasedWrapperEndsItsCommand: a leased command that is itself a
// wrapper (a `lockd run` inside `elect run -- sh -c '...'`) runs its own
// command in a group of its own and needs a moment, on SIGTERM, to end
// it. When the leased command's shell ends first, the watchdog gives what
// is left in the group that moment before killing it, so the wrapper's
// command does not outlive it.
func TestLeasedWrapperEndsItsCommand(t *testing.T) {
	dir := t.TempDir()
	inner := filepath.Join(dir, "wrapper.sh")
	pidFile := filepath.Join(dir, "pid")
	script := `setsid sleep 30 &
p=$!
trap 'sleep 0.3; kill $p; exit 0' TERM
echo $p > "$1.tmp" && mv "$1.tmp" "$1"
wait
`
	if err := os.WriteFile(inner, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := StartLeased([]string{"sh", "-c", `sh "$0" "$1" & wait`, inner, pidFile}, nil, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for b, err = os.ReadFile(pidFile); err != nil; b, err = os.ReadFile(pidFile) {
		time.Sleep(5 * time.Millisecond) // polling for the wrapper's own signal, not a timing guess
	}
	var job int
	fmt.Sscan(string(b), &job)
	t.Cleanup(func() { syscall.Kill(job, syscall.SIGKILL) })
	c.Signal(syscall.SIGTERM)
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("the command and its group did not end within a minute")
	}
	// The wrapper's command is in a session of its own: nothing but the
	// wrapper ends it, and the wrapper has ended. Give its SIGTERM (sent
	// before the wrapper exited) a bounded moment to land.
	for i := 0; i < 200 && syscall.Kill(job, 0) == nil; i++ {
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", job)); bytes.Contains(st, []byte(") Z ")) {
			break // ended, not yet reaped by init
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", job)); err == nil && !bytes.Contains(st, []byte(") Z ")) {
		t.Fatalf("the wrapper's command %d outlived it: %s", job, st)
	}
}

// TestWatchStartsCommandOnceGuarded: a command starts only once its
// watchdog runs its loop, never while the watchdog is still starting (an
// exec and a runtime's start-up: seconds on a starved host, during which
// nothing could kill the command at its deadline). Here the watchdog's
// "up" signal is held back by the test: the command waits for it, and
// when it does not come by the deadline the command never starts.
func TestWatchStartsCommandOnceGuarded(t *testing.T) {
	dir := t.TempDir()
	for _, release := range []bool{true, false} {
		w := PrepareWatch()
		<-w.ready
		if w.err != nil {
			t.Fatal(w.err)
		}
		<-w.guarding // the real watchdog is up; the test now plays a slow one
		held := make(chan struct{})
		w.guarding = held
		mark := filepath.Join(dir, fmt.Sprintf("started-%v", release))
		until := time.Now().Add(time.Hour)
		if !release {
			until = time.Now().Add(300 * time.Millisecond)
		}
		var released time.Time
		if release {
			go func() {
				time.Sleep(200 * time.Millisecond) // the watchdog's start-up, as the test has it
				released = time.Now()
				close(held)
			}()
		}
		c, err := w.Start([]string{"sh", "-c", "touch " + mark + "; exec sleep 30"}, nil, until)
		if !release {
			if !errors.Is(err, ErrLeaseOver) {
				t.Fatalf("watchdog never up: Start gave %v, want ErrLeaseOver", err)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the command started although its watchdog never was up")
			}
			if !w.armable() {
				t.Error("a Watch whose lease ended before it was up cannot be used again")
			}
			w.Cancel()
			waitGroupGone(t, w.wd.Process.Pid)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if released.IsZero() {
			t.Error("the command started before its watchdog was up")
		}
		c.Extend(time.Now()) // done: the watchdog ends it
		<-c.Done()
		waitGroupGone(t, c.pgid)
	}
}

// TestLeasedChildEndsWithoutWatchdog: a leased command that exits leaving
// nothing in its group has its group ended by its supervisor, without
// waiting for the watchdog to wake and look (a release waits for that).
// The watchdog is stopped (SIGSTOP) before the command exits: only the
// supervisor can end the group, and Done must find it empty.
func TestLeasedChildEndsWithoutWatchdog(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wt := PrepareWatch()
	c, err := wt.Start([]string{"sh", "-c", `while [ -e "$0" ]; do sleep 0.01; done`, gate}, nil, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(c.pgid, syscall.SIGSTOP); err != nil { // the watchdog leads the group
		t.Fatal(err)
	}
	os.Remove(gate) // the command exits by itself
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("the command did not end within a minute")
	}
	if err := syscall.Kill(-c.pgid, 0); err != syscall.ESRCH {
		syscall.Kill(-c.pgid, syscall.SIGKILL)
		t.Fatalf("the group (its watchdog stopped) was not empty when the command's end was reported: kill 0: %v", err)
	}
}
