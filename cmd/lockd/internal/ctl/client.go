package ctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/roundtable-go/roundtable/pkg/proc"
)

// Dial connects to the daemon's control socket at path; exit 69 when
// nobody serves it.
func Dial(path string) (*Conn, error) {
	f, err := connectUnix(path)
	if err != nil {
		return nil, proc.Exitf(proc.ExitUnavailable, "no lockd daemon at %s (start one with 'lockd serve'): %v", path, err)
	}
	return NewConn(f), nil
}

// noQuorum asks the daemon, on a second connection, whether it can grant
// at all (central: it follows a coordinator with a majority; voting: m
// members are alive): a timeout without a quorum is exit 69, not 75.
func noQuorum(socket string) bool {
	cn, err := Dial(socket)
	if err != nil {
		return true
	}
	defer cn.Close()
	var r Reply
	if cn.Send(Request{Op: "status"}) != nil || cn.Next(&r) != nil {
		return true
	}
	var st struct {
		Quorum *bool `json:"quorum"`
	}
	return json.Unmarshal(r.Status, &st) == nil && st.Quorum != nil && !*st.Quorum
}

// Lease tracks how long a held lock is good for on the client's own clock.
// It is extended by the daemon's "valid" messages; if they stop (the daemon
// is paused or dead) the client gives up when the time is out, without
// waiting to be told.
type Lease struct{ until, tick, settle time.Time }

// NewLease starts the lease of a grant. The checks' clock starts now too:
// a process stopped before its first check must still find its first
// check late, and read what the daemon sent meanwhile before deciding.
func NewLease(grant Reply) *Lease {
	l := &Lease{tick: time.Now()}
	l.Extend(grant)
	return l
}

// Extend takes a grant or "valid" message: the daemon, on the same host,
// says until when (its clock is this clock); older daemons say how long.
func (l *Lease) Extend(r Reply) {
	u := time.Now().Add(time.Duration(r.MS) * time.Millisecond)
	if r.UntilNS > 0 {
		u = time.Unix(0, r.UntilNS)
	}
	if u.After(l.until) {
		l.until = u
	}
}

// Overdue is the periodic check. A check that comes late means this
// process was itself stopped (SIGSTOP) or starved: the daemon's queued
// extensions are read first, for 50 ms, before the checks decide again.
func (l *Lease) Overdue() bool {
	now := time.Now()
	if !l.tick.IsZero() && now.Sub(l.tick) > 100*time.Millisecond {
		l.settle = now.Add(50 * time.Millisecond)
	}
	l.tick = now
	return !now.Before(l.settle) && now.After(l.until)
}

// WaitOpts are the flags of the commands that wait for a lock.
type WaitOpts struct {
	Socket   string        // the daemon's control socket
	Timeout  time.Duration // give up after this long (0: wait for ever)
	NonBlock bool          // give up at once if the lock is held
	Conflict int           // exit code when busy or timed out
}

// RunOpts is a parsed 'lockd run': from urfave/cli (runCmd) or from the
// quick parser of the common forms (ParseRun).
type RunOpts struct {
	WaitOpts
	KillGrace time.Duration // after the lock is lost: SIGTERM, then SIGKILL after this long
	Shell     bool          // run the command through /bin/sh -c
	Args      []string      // NAME [--] command args...
}

// DefaultKillGrace is --kill-grace's default.
const DefaultKillGrace = 5 * time.Second

// Tool is the program's name, in messages and environment variables.
const Tool = "lockd"

// CheckName takes the lock NAME off the front of a command's arguments.
func CheckName(args []string) (string, error) {
	if len(args) < 1 || args[0] == "" {
		return "", proc.Exitf(proc.ExitUsage, "a lock NAME is required")
	}
	if err := ValidName(args[0]); err != nil {
		return "", proc.Exitf(proc.ExitUsage, "%v", err)
	}
	return args[0], nil
}

// ValidName says why name cannot name a lock: it must be 1 to 255 bytes of
// UTF-8 without spaces or control characters. Every text output names a
// lock as one space-separated word on a line (`acquired NAME token T`,
// `lockd status`, `lockd watch`, the session protocol), so a space would
// make a line ambiguous and a newline would let a name forge a line that
// a script reads as an event of its own.
func ValidName(name string) error {
	switch {
	case name == "":
		return errors.New("a lock name cannot be empty")
	case len(name) > 255:
		return errors.New("lock names are at most 255 bytes")
	case !utf8.ValidString(name):
		return errors.New("lock names must be UTF-8")
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("lock names cannot contain spaces or control characters (%q)", name)
		}
	}
	return nil
}

func joinArgs(args []string) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += a
	}
	return s
}

// connectUnix connects to a Unix stream socket with the system calls
// themselves and reads and writes it through the runtime's poller as an
// *os.File: what net.Dial does less its address resolution, deadline
// timer and bookkeeping — and without package net, whose initialisation
// alone cost a `lockd run` more than this whole function. The connect
// blocks (a Unix socket's connect waits only while the daemon's backlog is
// full); the descriptor goes non-blocking afterwards, for the poller.
func connectUnix(path string) (*os.File, error) {
	fd, err := socketUnix(path)
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// socketUnix returns a blocking descriptor connected to the Unix stream
// socket at path.
func socketUnix(path string) (int, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return -1, os.NewSyscallError("connect", err)
	}
	return fd, nil
}
