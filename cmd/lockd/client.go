package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mutex"
)

// dial connects to the local daemon; exit 69 when nobody serves the socket.
func dial(c *ucli.Context) (*conn, error) { return dialPath(c.String("socket")) }

func dialPath(path string) (*conn, error) {
	if c := connectUnix(path); c != nil {
		return newConn(c), nil
	}
	nc, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return nil, cli.Exitf(cli.ExitUnavailable, "no lockd daemon at %s (start one with 'lockd serve'): %v", path, err)
	}
	return newConn(nc), nil
}

// noQuorum asks the daemon, on a second connection, whether it can grant
// at all (central: it follows a coordinator with a majority; voting: m
// members are alive): a timeout without a quorum is exit 69, not 75.
func noQuorum(socket string) bool {
	cn, err := dialPath(socket)
	if err != nil {
		return true
	}
	defer cn.c.Close()
	var r reply
	if cn.send(request{Op: "status"}) != nil || cn.next(&r) != nil {
		return true
	}
	var st struct {
		Quorum *bool `json:"quorum"`
	}
	return json.Unmarshal(r.Status, &st) == nil && st.Quorum != nil && !*st.Quorum
}

// lease tracks how long a held lock is good for on the client's own clock.
// It is extended by the daemon's "valid" messages; if they stop (the daemon
// is paused or dead) the client gives up when the time is out, without
// waiting to be told.
type lease struct{ until, tick, settle time.Time }

// newLease starts the lease of a grant. The checks' clock starts now too:
// a process stopped before its first check must still find its first
// check late, and read what the daemon sent meanwhile before deciding.
func newLease(grant reply) *lease {
	l := &lease{tick: time.Now()}
	l.extend(grant)
	return l
}

// extend takes a grant or "valid" message: the daemon, on the same host,
// says until when (its clock is this clock); older daemons say how long.
func (l *lease) extend(r reply) {
	u := time.Now().Add(time.Duration(r.MS) * time.Millisecond)
	if r.UntilNS > 0 {
		u = time.Unix(0, r.UntilNS)
	}
	if u.After(l.until) {
		l.until = u
	}
}

// overdue is the periodic check. A check that comes late means this
// process was itself stopped (SIGSTOP) or starved: the daemon's queued
// extensions are read first, for 50 ms, before the checks decide again.
func (l *lease) overdue() bool {
	now := time.Now()
	if !l.tick.IsZero() && now.Sub(l.tick) > 100*time.Millisecond {
		l.settle = now.Add(50 * time.Millisecond)
	}
	l.tick = now
	return !now.Before(l.settle) && now.After(l.until)
}

// acquire asks for name and waits for the answer. It returns the grant,
// or an exit error: 75 (busy or timed out; code from --conflict-exit-code)
// or 128+signal.
func acquire(o waitOpts, cn *conn, name string, sigs <-chan os.Signal) (reply, <-chan reply, error) {
	nonBlock := o.nonblock
	if err := cn.send(request{Op: "acquire", Name: name, NonBlock: nonBlock}); err != nil {
		return reply{}, nil, cli.Exitf(cli.ExitUnavailable, "lost the daemon: %v", err)
	}
	replies := make(chan reply, 16)
	go func() {
		defer close(replies)
		for {
			var r reply
			if err := cn.next(&r); err != nil {
				return
			}
			replies <- r
		}
	}()
	var timeout <-chan time.Time
	if o.timeout > 0 {
		timeout = time.After(o.timeout)
	}
	conflict := o.conflict
	for {
		select {
		case r, ok := <-replies:
			if !ok {
				return reply{}, nil, cli.Exitf(cli.ExitUnavailable, "the daemon closed the connection")
			}
			switch r.Event {
			case "acquired":
				return r, replies, nil
			case "busy":
				return reply{}, nil, cli.Exitf(conflict, "%s is held by another process", name)
			case "error":
				return reply{}, nil, cli.Exitf(cli.ExitUsage, "%s", r.Error)
			}
		case <-timeout:
			if noQuorum(o.socket) {
				return reply{}, nil, cli.Exitf(cli.ExitUnavailable, "timed out waiting for %s: the daemon has no quorum", name)
			}
			return reply{}, nil, cli.Exitf(conflict, "timed out waiting for %s", name)
		case s := <-sigs:
			return reply{}, nil, &cli.ExitError{Code: 128 + int(s.(syscall.Signal))}
		}
	}
}

// session is a client connection that holds NAME: the daemon connection,
// the signals caught meanwhile, the grant and the stream of later replies.
type session struct {
	cn      *conn
	sigs    chan os.Signal
	got     reply
	replies <-chan reply
}

// openSession catches signals (they must not kill us before the lock is
// released), connects to the daemon and acquires name.
func openSession(o waitOpts, name string) (*session, error) {
	s := &session{sigs: make(chan os.Signal, 4)}
	signal.Notify(s.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	var err error
	if s.cn, err = dialPath(o.socket); err != nil {
		return nil, err
	}
	if s.got, s.replies, err = acquire(o, s.cn, name, s.sigs); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// close ends the connection. The signals stay caught: the process exits
// next with the code it chose, and undoing Notify costs a round trip to
// the runtime's signal thread per signal (about 0.1 ms of a `lockd run`).
func (s *session) close() {
	s.cn.c.Close()
}

// waitOpts are the flags of the commands that wait for a lock.
type waitOpts struct {
	socket   string
	timeout  time.Duration
	nonblock bool
	conflict int
}

func waitOptsFrom(c *ucli.Context) waitOpts {
	return waitOpts{socket: c.String("socket"), timeout: c.Duration("timeout"), nonblock: c.Bool("nonblock"), conflict: c.Int("conflict-exit-code")}
}

// runOpts is a parsed 'lockd run': from urfave/cli (runCmd) or from the
// quick parser of the common forms (fastRunArgs).
type runOpts struct {
	waitOpts
	killGrace time.Duration
	shell     bool
	args      []string // NAME [--] command args...
}

const defaultKillGrace = 5 * time.Second

func checkName(args []string) (string, error) {
	if len(args) < 1 || args[0] == "" {
		return "", cli.Exitf(cli.ExitUsage, "a lock NAME is required")
	}
	if len(args[0]) > 255 {
		return "", cli.Exitf(cli.ExitUsage, "lock names are at most 255 bytes")
	}
	return args[0], nil
}

func validName(c *ucli.Context) (string, error) { return checkName(c.Args().Slice()) }

func runCmd(c *ucli.Context) error {
	return runWith(runOpts{waitOpts: waitOptsFrom(c), killGrace: c.Duration("kill-grace"), shell: c.Bool("shell"), args: c.Args().Slice()})
}

func runWith(o runOpts) error {
	name, err := checkName(o.args)
	if err != nil {
		return err
	}
	args := o.args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return cli.Exitf(cli.ExitUsage, "no command: lockd run NAME -- command args...")
	}
	if o.shell {
		args = []string{"/bin/sh", "-c", joinArgs(args)}
	}
	sess, err := openSession(o.waitOpts, name)
	if err != nil {
		return err
	}
	defer sess.close()
	cn, sigs, got, replies := sess.cn, sess.sigs, sess.got, sess.replies
	ls := newLease(got)
	kid, err := cli.StartChild(args, []string{"LOCKD_NAME=" + name, "LOCKD_TOKEN=" + strconv.FormatUint(got.Token, 10)})
	if err != nil {
		return err
	}
	grace := o.killGrace
	lost := func(why string) error {
		fmt.Fprintf(os.Stderr, "lockd: lock %s lost (%s): stopping the command\n", name, why)
		kid.Stop(grace)
		return cli.Exitf(cli.ExitLost, "lock %s lost while the command ran", name)
	}
	check := time.NewTicker(10 * time.Millisecond)
	defer check.Stop()
	for {
		select {
		case <-kid.Done():
			_ = cn.send(request{Op: "release", Name: name})
			return &cli.ExitError{Code: kid.ExitCode()}
		case s := <-sigs:
			kid.Signal(s.(syscall.Signal))
		case r, ok := <-replies:
			switch {
			case !ok:
				return lost("the daemon went away")
			case r.Event == "valid" && r.Name == name:
				ls.extend(r)
			case r.Event == "lost" && r.Name == name:
				return lost(r.Reason)
			}
		case <-check.C:
			if ls.overdue() && len(replies) == 0 {
				return lost("lease ran out without renewal")
			}
		}
	}
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

// hold acquires NAME, prints it, and holds until stdin closes or a signal.
func holdCmd(c *ucli.Context) error {
	name, err := validName(c)
	if err != nil {
		return err
	}
	out := cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON))
	sess, err := openSession(waitOptsFrom(c), name)
	if err != nil {
		return err
	}
	defer sess.close()
	cn, sigs, got, replies := sess.cn, sess.sigs, sess.got, sess.replies
	emit(out, c.Bool(cli.FlagJSON), got)
	ls := newLease(got)
	eof := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(eof) }()
	check := time.NewTicker(10 * time.Millisecond)
	defer check.Stop()
	lost := func(r reply) error {
		emit(out, c.Bool(cli.FlagJSON), r)
		return cli.Exitf(cli.ExitLost, "lock %s lost", name)
	}
	for {
		select {
		case <-eof:
			_ = cn.send(request{Op: "release", Name: name})
			emit(out, c.Bool(cli.FlagJSON), reply{Event: "released", Name: name, Token: got.Token})
			return nil
		case s := <-sigs:
			_ = cn.send(request{Op: "release", Name: name})
			emit(out, c.Bool(cli.FlagJSON), reply{Event: "released", Name: name, Token: got.Token})
			return &cli.ExitError{Code: 128 + int(s.(syscall.Signal))}
		case r, ok := <-replies:
			switch {
			case !ok:
				return lost(reply{Event: "lost", Name: name, Token: got.Token, Reason: "the daemon went away"})
			case r.Event == "valid":
				ls.extend(r)
			case r.Event == "lost":
				return lost(r)
			}
		case <-check.C:
			if ls.overdue() && len(replies) == 0 {
				return lost(reply{Event: "lost", Name: name, Token: got.Token, Reason: "lease ran out without renewal"})
			}
		}
	}
}

func emit(out *cli.Output, jsonOut bool, r reply) {
	if jsonOut {
		out.JSON(r)
	} else {
		out.Line(r.String())
	}
}

func statusCmd(c *ucli.Context) error {
	cn, err := dial(c)
	if err != nil {
		return err
	}
	defer cn.c.Close()
	if err := cn.send(request{Op: "status"}); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "%v", err)
	}
	var r reply
	if err := cn.next(&r); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "%v", err)
	}
	out := cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON))
	if c.Bool(cli.FlagJSON) {
		out.Line(string(r.Status))
		return nil
	}
	var st struct {
		ID          uint32             `json:"id"`
		Algo        string             `json:"algo"`
		Coordinator uint32             `json:"coordinator"`
		Term        uint64             `json:"term"`
		Clock       uint64             `json:"clock"`
		Token       string             `json:"token"`
		Count       uint64             `json:"count"`
		Holder      uint32             `json:"holder"`
		K           int                `json:"k"`
		M           int                `json:"m"`
		Counter     uint64             `json:"counter"`
		Votes       map[string]uint32  `json:"votes"`
		Locks       []mutex.LockStatus `json:"locks"`
	}
	if err := json.Unmarshal(r.Status, &st); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "bad status from the daemon: %v", err)
	}
	head := fmt.Sprintf("daemon %d algo %s", st.ID, st.Algo)
	switch st.Algo {
	case "central":
		head += fmt.Sprintf(" coordinator %d term %d", st.Coordinator, st.Term)
	case "ricart-agrawala":
		head += fmt.Sprintf(" clock %d", st.Clock)
	case "token-ring":
		head += fmt.Sprintf(" copy %s count %d holder %d k %d", st.Token, st.Count, st.Holder, st.K)
	case "voting":
		head += fmt.Sprintf(" m %d counter %d", st.M, st.Counter)
		names := make([]string, 0, len(st.Votes))
		for n := range st.Votes {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			head += fmt.Sprintf(" vote %s→%d", n, st.Votes[n])
		}
	}
	out.Line(head)
	for _, l := range st.Locks {
		line := fmt.Sprintf("lock %s", l.Name)
		if l.Holder != 0 {
			line += fmt.Sprintf(" holder %d/%d token %d", l.Holder, l.Client, l.Token)
		} else {
			line += " free"
		}
		if len(l.Queue) > 0 {
			line += fmt.Sprintf(" queue %v", l.Queue)
		}
		out.Line(line)
	}
	if st.Algo == "central" && st.Coordinator == 0 {
		return cli.Exitf(cli.ExitUnavailable, "no coordinator yet")
	}
	return nil
}

func watchCmd(c *ucli.Context) error {
	cn, err := dial(c)
	if err != nil {
		return err
	}
	defer cn.c.Close()
	if err := cn.send(request{Op: "watch"}); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "%v", err)
	}
	out := cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON))
	for {
		var r reply
		if err := cn.next(&r); err != nil {
			return cli.Exitf(cli.ExitUnavailable, "the daemon went away")
		}
		if r.Event == "valid" {
			continue
		}
		emit(out, c.Bool(cli.FlagJSON), r)
	}
}

// connectUnix connects to a Unix stream socket with two system calls and
// reads and writes it through the runtime's poller as an *os.File: what
// net.Dial does less its address resolution, deadline timer and
// bookkeeping, about 4% of a `lockd run`. It returns nil on any failure,
// and the caller dials with net, which explains the failure.
func connectUnix(path string) *os.File {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		syscall.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), path)
}
