package cli

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Child is a supervised child command: it runs in its own process group,
// receives SIGKILL if this process dies (Pdeathsig, so it never outlives
// its wrapper holding a resource), inherits stdin, stdout and stderr, and
// inherits no other descriptor (Go opens every file close-on-exec, so the
// coordination sockets do not leak into it).
type Child struct {
	cmd   *exec.Cmd
	pgid  int
	done  chan struct{}
	state *os.ProcessState
	lease *os.File // StartLeased: the watchdog's deadlines
}

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
	return startChild(args, env, 0)
}

// startChild starts the command in process group pgid, or in a new group
// of its own when pgid is 0.
func startChild(args []string, env []string, pgid int) (*Child, error) {
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
	go func() {
		_ = cmd.Wait()
		c.state = cmd.ProcessState
		close(c.done)
	}()
	return c, nil
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

// Signal sends sig to the child's whole process group.
func (c *Child) Signal(sig syscall.Signal) {
	select {
	case <-c.done:
	default:
		_ = syscall.Kill(-c.pgid, sig)
	}
}

// ExitCode is the child's exit status, or 128+n if signal n killed it.
// Valid after Done is closed.
func (c *Child) ExitCode() int { return StatusCode(c.state) }

// Stop sends SIGTERM to the child's process group, waits up to grace, then
// sends SIGKILL, and returns once the child has exited. Nothing the child
// started in its group is left behind either way.
func (c *Child) Stop(grace time.Duration) {
	c.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	}
	_ = syscall.Kill(-c.pgid, syscall.SIGKILL)
	<-c.done
}
