package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Child is a supervised child command: it runs in its own process group,
// receives SIGKILL if this process dies (Pdeathsig, so it never outlives
// its wrapper holding a resource; Pdeathsig reaches the command alone,
// never what it started, so a leased command's group is ended by its
// watchdog then, which outlives this process: StartLeased), inherits
// stdin, stdout and stderr, and
// inherits no other descriptor (Go opens every file close-on-exec, so the
// coordination sockets do not leak into it).
//
// The command's end is its whole group's: when the command exits, whatever
// it left running in its process group (a background job of a shell, say
// `sh -c 'server & wait'` after SIGINT, which a non-interactive shell's
// background jobs ignore) gets SIGTERM, then SIGKILL after the kill grace
// (a leased command's group gets SIGKILL from its watchdog at once), and
// is reaped: Done is closed only once the group is empty, so a wrapper
// that gives its resource back after Done leaves nothing running under it.
type Child struct {
	cmd   *exec.Cmd
	pgid  int
	done  chan struct{}
	state *os.ProcessState
	lease *os.File        // StartLeased: the watchdog's deadlines
	guard <-chan struct{} // StartLeased: closed once the watchdog ignores the group's signals
	grace atomic.Int64    // SetKillGrace
	watch *Watch          // StartLeased: the watchdog, for its reports
	end   atomic.Int64    // StartLeased: the resource's end (CLOCK_MONOTONIC)
	slack atomic.Int64    // StartLeased: the slack sent with it
	// reaped is when this process reaped the command (CLOCK_MONOTONIC),
	// before the sweep of its group: how long a killed command took to
	// exit is measured to it (TestWatchdogLateness).
	reaped int64
}

// DefaultKillGrace is how long what a command left running in its group
// has between SIGTERM and SIGKILL, unless SetKillGrace says otherwise.
const DefaultKillGrace = 5 * time.Second

// SetKillGrace sets how long what the command leaves running in its group
// when it exits has between SIGTERM and SIGKILL.
func (c *Child) SetKillGrace(d time.Duration) { c.grace.Store(int64(d)) }

// subreaper makes this process the reaper of its orphaned descendants
// (PR_SET_CHILD_SUBREAPER): a command's background job whose parent has
// exited is reparented here, so that sweep can reap it rather than leave
// it to an init that may not.
var subreaper = sync.OnceFunc(func() {
	const prSetChildSubreaper = 36
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
})

// StartChild starts args (exec'd directly; wrap in "sh -c" to use a
// shell) with extra environment variables. It returns an ExitError with
// code 127 when the command is not found and 126 when it cannot run. A
// command found only through a relative $PATH entry is refused (126), as
// exec.ErrDot refuses it, rather than run from the current directory by
// surprise.
func StartChild(args []string, env []string) (*Child, error) {
	if len(args) == 0 {
		return nil, Exitf(ExitUsage, "no command given after --")
	}
	return startChild(args, env, 0, nil)
}

// startChild starts the command in process group pgid, or in a new group
// of its own when pgid is 0, under the watchdog w (nil: none), whose
// deadline pipe is closed when the command exits.
func startChild(args []string, env []string, pgid int, w *Watch) (*Child, error) {
	subreaper()
	cmd := exec.Command(args[0], args[1:]...)
	if errors.Is(cmd.Err, exec.ErrNotFound) {
		return nil, Exitf(ExitNotFound, "%s: command not found", args[0])
	}
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		if pgid != 0 && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ESRCH)) {
			return nil, err
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, Exitf(ExitNotFound, "%s: command not found", args[0])
		}
		return nil, Exitf(ExitCannotExec, "%s: %v", args[0], err)
	}
	if pgid == 0 {
		pgid = cmd.Process.Pid
	}
	c := &Child{cmd: cmd, pgid: pgid, done: make(chan struct{})}
	if w != nil {
		c.watch, c.lease, c.guard = w, w.w, w.guarding
	}
	c.grace.Store(int64(DefaultKillGrace))
	go func() {
		_ = cmd.Wait()
		c.reaped = monotonic()
		c.state = cmd.ProcessState
		c.sweep()
		if c.lease != nil {
			c.watch.closeReports() // the watchdog is gone: its last reports are in
		}
		close(c.done)
	}()
	return c, nil
}

// sweep ends and reaps what the command left in its process group once
// the command itself has exited. A leased command's watchdog ends the
// group itself, with SIGKILL, when its deadline pipe closes; otherwise
// the group gets SIGTERM, then SIGKILL after the kill grace.
func (c *Child) sweep() {
	if c.lease != nil {
		if c.onlyWatchdogLeft() {
			// Nothing the command started is left: end the group here
			// rather than wake the watchdog to look through /proc (two
			// wake-ups and a scan of every process: 150 ms at the median
			// under `scripts/bench-ticketd.sh`'s load, on every release).
			_ = syscall.Kill(-c.pgid, syscall.SIGKILL)
		}
		c.lease.Close()
	} else if c.reap() {
		return
	} else {
		_ = syscall.Kill(-c.pgid, syscall.SIGTERM)
		_ = syscall.Kill(-c.pgid, syscall.SIGCONT) // a stopped job must run to see it
		if c.waitEmpty(time.Duration(c.grace.Load())) {
			return
		}
		killGroup(c.pgid)
	}
	c.waitEmpty(5 * time.Second)
}

// onlyWatchdogLeft reports whether no live child of this process but the
// watchdog is in the command's group (c.pgid, which the watchdog leads),
// once the command has exited and been reaped. A process the command left
// running in its group is this process's child then, or a descendant of
// one in the group: its parent, if it exited, handed it to this process (a
// subreaper). Any doubt (/proc unreadable) answers false, and the watchdog
// gives what is left the kill grace, as before.
func (c *Child) onlyWatchdogLeft() bool {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return false
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			return false
		}
		for _, f := range bytes.Fields(b) {
			if string(f) == strconv.Itoa(c.pgid) {
				continue
			}
			st, err := os.ReadFile("/proc/" + string(f) + "/stat")
			if err != nil {
				continue // gone meanwhile
			}
			// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
			i := bytes.LastIndexByte(st, ')')
			if i < 0 {
				return false
			}
			if fs := bytes.Fields(st[i+1:]); len(fs) < 3 || string(fs[0]) != "Z" && string(fs[2]) == strconv.Itoa(c.pgid) {
				return false
			}
		}
	}
	return true
}

// waitEmpty waits up to d for the group to be empty, reaping it.
func (c *Child) waitEmpty(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !c.reap() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// reap collects the group's members that have exited (those whose parent
// exited first are this process's: subreaper) and reports whether the
// group is empty.
func (c *Child) reap() (empty bool) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-c.pgid, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			break
		}
	}
	return syscall.Kill(-c.pgid, 0) == syscall.ESRCH
}

// StatusCode is the exit code for a child's end: its exit code, or 128+n
// if signal n killed it.
func StatusCode(ps *os.ProcessState) int {
	if ps == nil {
		return ExitCannotExec
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Pid returns the child's process ID (also its process group ID, unless
// the child is leased: then the group is its watchdog's).
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Done is closed when the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Signal sends sig to the child's whole process group; to the command
// alone while a leased command's watchdog, which leads the group, is
// still starting (the signal would end it). What the command leaves in its
// group is swept when it exits.
func (c *Child) Signal(sig syscall.Signal) {
	select {
	case <-c.done:
		return
	default:
	}
	if c.guard != nil {
		select {
		case <-c.guard:
		default:
			_ = syscall.Kill(c.cmd.Process.Pid, sig)
			return
		}
	}
	_ = syscall.Kill(-c.pgid, sig)
}

// ExitCode is the child's exit status, or 128+n if signal n killed it.
// Valid after Done is closed.
func (c *Child) ExitCode() int { return StatusCode(c.state) }

// Stop sends SIGTERM to the child's process group, waits up to grace, then
// sends SIGKILL, and returns once the child and its group have exited.
// Nothing the child started in its group is left behind either way.
func (c *Child) Stop(grace time.Duration) {
	c.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	}
	killGroup(c.pgid) // and, under realtime scheduling, the CPU to die
	<-c.done
}
