package cli

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// A leased child runs under a deadline that must hold even when its
// supervisor cannot act: a supervisor stopped with SIGSTOP, or starved of
// CPU, must not leave its command running past the lease it was granted.
// So the deadline is kept by a second process, a watchdog: this same
// binary, re-executed with watchdogEnv set. The watchdog leads a process
// group of its own, the command joins that group, and when the deadline
// passes without being moved the watchdog sends SIGKILL to the whole
// group, itself included. Deadlines are absolute CLOCK_MONOTONIC readings,
// which both processes share, so a supervisor paused between computing a
// deadline and writing it cannot stretch it.
const watchdogEnv = "ROUNDTABLE_WATCHDOG_DEADLINE"

// monotonic reads CLOCK_MONOTONIC in nanoseconds (the clock Go's own
// timers use).
func monotonic() int64 {
	var ts syscall.Timespec
	_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// monoBase pairs a CLOCK_MONOTONIC reading with a time.Time taken just
// after it, so a time.Time deadline converts to CLOCK_MONOTONIC without
// reading the clock again at conversion time. The conversion errs early,
// by the microseconds between the two readings. Taken on first use: tools
// that never lease a child never pay for it.
type monoPair struct {
	mono int64
	t    time.Time
}

var monoBase = sync.OnceValue(func() monoPair {
	m := monotonic()
	return monoPair{m, time.Now()}
})

func monoOf(t time.Time) int64 {
	b := monoBase()
	return b.mono + int64(t.Sub(b.t))
}

// RunWatchdog turns this process into a watchdog if it was started as one
// (StartLeased), and never returns then. Main calls it first.
func RunWatchdog() {
	v, ok := os.LookupEnv(watchdogEnv)
	if !ok {
		return
	}
	// "-": started ahead of its command (PrepareWatch), the first deadline
	// comes on stdin; until then there is nothing to kill.
	armed, deadline := v != unarmed, int64(0)
	if armed {
		var err error
		if deadline, err = strconv.ParseInt(v, 10, 64); err != nil {
			os.Exit(ExitUsage)
		}
	}
	// Signals sent to the command's group reach the watchdog too: it
	// outlives them, and only SIGKILL or its deadline end it.
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1,
		syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	// From here on a signal sent to the group spares the watchdog. The
	// supervisor learns it from one byte on standard output (a pipe):
	// until then it signals the command alone, since a signal to the group
	// would end the watchdog and leave the group unguarded.
	_, _ = syscall.Write(1, []byte{'r'})
	_ = syscall.Close(1)
	// Deadlines come on stdin, 8 bytes each. The watchdog reads what is
	// there before every look at the clock, the last one included: a
	// watchdog that was itself starved of CPU (or slow to start) still
	// honours every extension the supervisor wrote before the deadline.
	// End of input (the supervisor is done, or gone) ends the lease.
	if err := syscall.SetNonblock(0, true); err != nil {
		os.Exit(ExitUsage)
	}
	var pending []byte
	drain := func() (eof bool) {
		var b [512]byte
		for {
			n, err := syscall.Read(0, b[:])
			switch {
			case n > 0:
				pending = append(pending, b[:n]...)
				for len(pending) >= 8 {
					deadline, armed = int64(binary.LittleEndian.Uint64(pending[:8])), true
					pending = pending[8:]
				}
			case err == syscall.EINTR:
			case err == syscall.EAGAIN:
				return false
			default:
				return true // end of input, or an error reading it
			}
		}
	}
	for {
		if drain() {
			if !armed {
				os.Exit(0) // never given a command
			}
			// The supervisor is done with the command before the
			// deadline. What is left in the group may be a wrapper (a
			// `lockd run` inside an `elect run` command) still ending a
			// command of its own in a group of its own: it gets SIGTERM
			// and up to the kill grace, never past the deadline, to end
			// before the whole group is killed.
			endGroup(deadline)
			break
		}
		if !armed {
			var r syscall.FdSet
			r.Bits[0] |= 1
			_, _ = syscall.Select(1, &r, nil, nil, nil)
			continue
		}
		left := deadline - monotonic()
		if left <= 0 {
			break
		}
		var r syscall.FdSet
		r.Bits[0] |= 1 // stdin
		tv := syscall.NsecToTimeval(left)
		_, _ = syscall.Select(1, &r, nil, nil, &tv) // readable, timed out or interrupted: look again
	}
	_ = syscall.Kill(0, syscall.SIGKILL) // the whole group, the watchdog last
	os.Exit(1)
}

// endGroup sends SIGTERM to the watchdog's group (the watchdog ignores it)
// and waits until no other live process is left in it, the deadline
// passes or DefaultKillGrace has gone by, whichever comes first.
func endGroup(deadline int64) {
	_ = syscall.Kill(0, syscall.SIGTERM)
	_ = syscall.Kill(0, syscall.SIGCONT) // a stopped job must run to see it
	end := min(deadline, monotonic()+int64(DefaultKillGrace))
	for othersInGroup() {
		left := end - monotonic()
		if left <= 0 {
			return
		}
		tv := syscall.NsecToTimeval(min(left, int64(10*time.Millisecond)))
		_, _ = syscall.Select(0, nil, nil, nil, &tv)
	}
}

// othersInGroup reports whether a live process other than this one is
// in this process's group (it leads the group: its ID is the group's).
func othersInGroup() bool {
	self := os.Getpid()
	d, err := os.Open("/proc")
	if err != nil {
		return false
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || string(f[0]) == "Z" {
			continue
		}
		if pg, err := strconv.Atoi(string(f[2])); err == nil && pg == self {
			return true
		}
	}
	return false
}

// ErrLeaseOver is StartLeased's error when the deadline passed before the
// command could start.
var ErrLeaseOver = errors.New("the lease ended before the command started")

// unarmed is watchdogEnv's value for a watchdog started before its
// deadline is known.
const unarmed = "-"

// A Watch is a watchdog started ahead of its command (PrepareWatch), so
// that its start overlaps what the supervisor waits for first (a ticket,
// a lock); Start gives it its deadline and then starts the command.
type Watch struct {
	ready    chan struct{}
	guarding chan struct{} // closed once the watchdog ignores its group's signals
	wd       *exec.Cmd
	w        *os.File
	err      error
	armed    bool // Start has given it a deadline
}

// PrepareWatch starts a watchdog with no deadline, in the background. A
// Watch that no command uses must be Cancelled.
func PrepareWatch() *Watch {
	l := &Watch{ready: make(chan struct{}), guarding: make(chan struct{})}
	go func() {
		defer close(l.ready)
		self, err := os.Executable()
		if err != nil {
			l.err = Exitf(ExitCannotExec, "cannot find this program to watch the command: %v", err)
			return
		}
		r, w, err := os.Pipe()
		if err != nil {
			l.err = err
			return
		}
		defer r.Close()
		ready, readyW, err := os.Pipe()
		if err != nil {
			w.Close()
			l.err = err
			return
		}
		wd := exec.Command(self)
		wd.Env = append(os.Environ(), watchdogEnv+"="+unarmed)
		wd.Stdin, wd.Stdout, wd.Stderr = r, readyW, os.Stderr
		wd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		err = wd.Start()
		readyW.Close()
		if err != nil {
			ready.Close()
			w.Close()
			l.err = Exitf(ExitCannotExec, "cannot start the watchdog: %v", err)
			return
		}
		go func() { _ = wd.Wait() }()
		// The watchdog says when it ignores the signals sent to its group
		// (or dies first: then there is nothing left to spare).
		go func() {
			defer ready.Close()
			var b [1]byte
			_, _ = ready.Read(b[:])
			close(l.guarding)
		}()
		l.wd, l.w = wd, w
	}()
	return l
}

// Guarding is closed once the watchdog is up (Start need not wait for
// it). A watchdog that failed to start never closes it: Start says why.
func (l *Watch) Guarding() <-chan struct{} { return l.guarding }

// Cancel ends a Watch that no command will use: its watchdog leaves.
func (l *Watch) Cancel() {
	<-l.ready
	if l.w != nil {
		l.w.Close()
	}
}

// StartLeased starts args as StartChild does, but the command may run only
// until the deadline, which Extend moves: past it, a watchdog process kills
// the command's whole process group, whether or not this process is
// running then. Signal and Stop reach the command's group as before; the
// watchdog ignores everything but SIGKILL.
//
// The watchdog is one WarmWatch started ahead when there is one (and the
// next is then started in the background), so that a command need not
// wait for a watchdog's start-up.
func StartLeased(args, env []string, until time.Time) (*Child, error) {
	if len(args) == 0 {
		return nil, Exitf(ExitUsage, "no command given after --")
	}
	spareMu.Lock()
	w, warm := spare, spare != nil
	spare = nil
	spareMu.Unlock()
	if w == nil {
		w = PrepareWatch()
	}
	c, err := w.Start(args, env, until)
	if errors.Is(err, ErrLeaseOver) && w.armable() {
		putSpare(w) // not up in time: it will be for the next lease
	} else if warm {
		WarmWatch()
	}
	return c, err
}

// spare is the watchdog WarmWatch started for StartLeased's next command.
var (
	spareMu sync.Mutex
	spare   *Watch
)

// WarmWatch starts a watchdog in the background for StartLeased's next
// command, unless one waits already. A tool that will run leased commands
// (elect run with a command) calls it at start; StartLeased then keeps one
// warm.
func WarmWatch() { putSpare(nil) }

func putSpare(w *Watch) {
	spareMu.Lock()
	defer spareMu.Unlock()
	if spare != nil {
		if w != nil {
			w.Cancel()
		}
		return
	}
	if w == nil {
		w = PrepareWatch()
	}
	spare = w
}

// armable reports whether the Watch's watchdog started and was never
// given a deadline.
func (l *Watch) armable() bool {
	select {
	case <-l.ready:
		return l.err == nil && !l.armed
	default:
		return true
	}
}

// Start arms the watchdog with until and starts args under it, as
// StartLeased does.
func (l *Watch) Start(args, env []string, until time.Time) (*Child, error) {
	if len(args) == 0 {
		l.Cancel()
		return nil, Exitf(ExitUsage, "no command given after --")
	}
	<-l.ready
	if l.err != nil {
		return nil, l.err
	}
	// The command starts only once the watchdog runs its loop (it has
	// said so on its ready pipe): a watchdog still starting (an exec and a
	// runtime's start-up, which take seconds on a starved host: 0.9 s at
	// the median, 2.2 s at worst for a race-built binary beside ten busy
	// loops on 2 cores) could not kill at the deadline, and the command
	// would outlive its lease by that much. A watchdog not up by the
	// deadline means this lease is over; the Watch, still unarmed, may
	// be used again (StartLeased keeps it for the next command).
	if !time.Now().Before(until) {
		return nil, ErrLeaseOver // a select below could pick either ready case
	}
	select {
	case <-l.guarding:
	case <-time.After(time.Until(until)):
		return nil, ErrLeaseOver
	}
	// The deadline goes first: the command never runs unwatched.
	l.armed = true
	var b [8]byte
	deadline := monoOf(until)
	binary.LittleEndian.PutUint64(b[:], uint64(deadline))
	if _, err := l.w.Write(b[:]); err != nil {
		l.w.Close()
		return nil, ErrLeaseOver // the watchdog is gone
	}
	c, err := startChild(args, env, l.wd.Process.Pid, l.w, l.guarding)
	if err != nil {
		_ = syscall.Kill(-l.wd.Process.Pid, syscall.SIGKILL)
		l.w.Close()
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ESRCH) {
			return nil, ErrLeaseOver // the watchdog's group is gone: it fired
		}
		return nil, err
	}
	// A watchdog fires only at the deadline, and a command that joined its
	// group before it fired dies with it. Past the deadline the watchdog
	// may have cleared the group before the command joined (a watchdog
	// that has exited but is not yet reaped still holds the group's ID),
	// or be clearing it right now (killing, not yet exited: on a starved
	// host that window is long): the lease is over either way, so the
	// group is killed here.
	if monotonic() >= deadline {
		_ = syscall.Kill(-l.wd.Process.Pid, syscall.SIGKILL)
		<-c.done
		return nil, ErrLeaseOver
	}
	return c, nil // when the command exits, sweep closes l.w: the watchdog clears the group, then exits
}

// Extend moves a leased child's deadline.
func (c *Child) Extend(until time.Time) {
	if c.lease == nil {
		return
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(monoOf(until)))
	_, _ = c.lease.Write(b[:])
}
