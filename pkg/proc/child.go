package proc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// Child is a supervised child command: it runs in its own process group,
// receives SIGKILL if this process dies (Pdeathsig, so it never outlives
// its wrapper holding a resource), inherits stdin, stdout and stderr, and
// inherits no other descriptor (Go opens every file close-on-exec, so the
// coordination sockets do not leak into it).
type Child struct {
	pid   int
	done  chan struct{}
	state syscall.WaitStatus
}

// StartChild starts args (exec'd directly; wrap in "sh -c" to use a
// shell) with extra environment variables. It returns an ExitError with
// code 127 when the command is not found and 126 when it cannot run.
func StartChild(args []string, env []string) (*Child, error) {
	pid, pidfd, err := Spawn(args, env)
	if err != nil {
		return nil, err
	}
	c := &Child{pid: pid, done: make(chan struct{})}
	go c.wait(pidfd)
	return c, nil
}

// Spawn starts args as StartChild does (own process group, SIGKILL when
// this process dies, stdin, stdout and stderr only, env added) and leaves
// the waiting to the caller: it returns the process ID and a pidfd, a
// descriptor that turns readable when the child exits (-1 before Linux
// 5.3; then wait for it otherwise). The child is reaped with wait4.
func Spawn(args []string, env []string) (pid, pidfd int, err error) {
	if len(args) == 0 {
		return 0, -1, Exitf(ExitUsage, "no command given after --")
	}
	path, err := lookPath(args[0])
	if err != nil {
		if errors.Is(err, errNotFound) || errors.Is(err, os.ErrNotExist) {
			return 0, -1, Exitf(ExitNotFound, "%s: command not found", args[0])
		}
		return 0, -1, Exitf(ExitCannotExec, "%s: %v", args[0], err)
	}
	// syscall.ForkExec rather than os/exec: the same fork and exec, without
	// os/exec's one-off probe for pidfd support, which forks the whole
	// process once more (about 0.3 ms of every short `lockd run`).
	pidfd = -1
	pid, err = syscall.ForkExec(path, args, &syscall.ProcAttr{
		Env:   append(os.Environ(), env...),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, PidFD: &pidfd},
	})
	if err != nil {
		return 0, -1, Exitf(ExitCannotExec, "%s: %v", args[0], err)
	}
	return pid, pidfd, nil
}

// StatusCode is the exit code for a child's wait status: its exit code,
// or 128+n if signal n killed it.
func StatusCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// wait reaps the child and closes done. With a pidfd (Linux 5.3 and
// later) it waits in the runtime's poller, which a short-lived client
// already runs: a goroutine blocked in wait4 instead holds a thread in a
// system call, and the scheduler wakes another thread to stand in for it
// (several futex hand-offs, a measurable share of a `lockd run`).
func (c *Child) wait(pidfd int) {
	defer close(c.done)
	if pidfd >= 0 {
		reaped := false
		if syscall.SetNonblock(pidfd, true) == nil {
			f := os.NewFile(uintptr(pidfd), "pidfd")
			if rc, err := f.SyscallConn(); err == nil {
				// The pidfd turns readable when the child exits.
				_ = rc.Read(func(uintptr) bool {
					pid, err := syscall.Wait4(c.pid, &c.state, syscall.WNOHANG, nil)
					reaped = pid == c.pid
					return reaped || (err != nil && err != syscall.EINTR)
				})
			}
			f.Close()
		} else {
			syscall.Close(pidfd)
		}
		if reaped {
			return
		}
	}
	for {
		if _, err := syscall.Wait4(c.pid, &c.state, 0, nil); err != syscall.EINTR {
			return
		}
	}
}

var errNotFound = errors.New("executable file not found in $PATH")

// lookPath is exec.LookPath's search on Unix, written out so that this
// package does without os/exec: os/exec brings in path/filepath, and the
// Go spec's initialisation order then makes every package that sorts
// before path/filepath initialise before package quick can run `lockd run`
// (3.5 ms of CPU per run, perf stat). As exec.LookPath: a name with a slash is
// taken as it is; otherwise the first executable file in $PATH's
// directories wins, and one found through a relative entry ("." or an
// empty one) is refused, as exec.ErrDot refuses it, rather than run from
// the current directory by surprise.
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, executable(name)
	}
	path := os.Getenv("PATH")
	if path == "" {
		return "", errNotFound
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		if executable(p) != nil {
			continue
		}
		if !strings.HasPrefix(dir, "/") {
			return "", fmt.Errorf("found as %s through a relative $PATH entry; give the path to run it from there", p)
		}
		return p, nil
	}
	return "", errNotFound
}

// executable: path names a file, not a directory, with an execute bit
// (whether it may run for this user, execve says).
func executable(path string) error {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return &os.PathError{Op: "exec", Path: path, Err: syscall.EISDIR}
	}
	if st.Mode&0o111 == 0 {
		return &os.PathError{Op: "exec", Path: path, Err: syscall.EACCES}
	}
	return nil
}

// Pid returns the child's process ID (also its process group ID).
func (c *Child) Pid() int { return c.pid }

// Done is closed when the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Signal sends sig to the child's whole process group.
func (c *Child) Signal(sig syscall.Signal) {
	select {
	case <-c.done:
	default:
		_ = syscall.Kill(-c.pid, sig)
	}
}

// ExitCode is the child's exit status, or 128+n if signal n killed it.
// Valid after Done is closed.
func (c *Child) ExitCode() int { return StatusCode(c.state) }

// Stop sends SIGTERM to the child's process group, waits up to grace, then
// sends SIGKILL, and returns once the child has exited.
func (c *Child) Stop(grace time.Duration) {
	c.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		// The leader process is gone; make sure nothing it spawned in
		// its group lingers.
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		return
	case <-t.C:
	}
	c.Signal(syscall.SIGKILL)
	_ = syscall.Kill(-c.pid, syscall.SIGKILL)
	<-c.done
}
