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
	// Under the supervisor's realtime policy when it asked for it
	// (sched.go): the watchdog's own lateness is the kill slack.
	watchdogRealtime()
	// "-": started ahead of its command (PrepareWatch), the first deadline
	// comes on stdin; until then there is nothing to kill. Otherwise v is
	// the resource's end, with no slack but what the watchdog measures.
	armed, end, slack := v != unarmed, int64(0), int64(0)
	if armed {
		var err error
		if end, err = strconv.ParseInt(v, 10, 64); err != nil {
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
	// would end the watchdog and leave the group unguarded. The pipe then
	// carries the watchdog's worst timer lateness (slack.go), 8 bytes each
	// time it changes; a supervisor that does not read them loses them
	// rather than block the watchdog.
	// due is when the loop means to look at the clock next (at once,
	// from here): a look that comes later, for whatever reason (a sleep
	// that ended late, a stop or a starved stretch anywhere in the loop),
	// is late by that much.
	due, ended := monotonic(), false
	_, _ = syscall.Write(1, []byte{'r'})
	_ = syscall.SetNonblock(1, true)
	var win lateWindow
	reported, reportedAt := int64(0), int64(0)
	report := func(now int64) {
		w := win.recent(now)
		// On change, and once a bucket's span while it is not zero, so
		// that the supervisor's window does not forget a lateness this
		// one still counts.
		if w == reported && (w == 0 || now-reportedAt < bucketSpan) {
			return
		}
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(w))
		if n, _ := syscall.Write(1, b[:]); n == 8 {
			reported, reportedAt = w, now
		}
	}
	// Deadlines come on stdin, 16 bytes each: the resource's end and the
	// supervisor's slack. The watchdog reads what is there before every
	// look at the clock, the last one included: a watchdog that was
	// itself starved of CPU (or slow to start) still honours every
	// extension the supervisor wrote before the deadline. End of input
	// (the supervisor is done, or gone: its death, SIGKILL included,
	// closes the pipe's only writer) ends the lease, and the group with
	// it; a watchdog never armed just exits. So no watchdog outlives both
	// its supervisor and its group: it leaves at the end of input or at
	// its deadline, whichever comes first.
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
				for len(pending) >= 16 {
					end, slack, armed = int64(binary.LittleEndian.Uint64(pending[:8])), int64(binary.LittleEndian.Uint64(pending[8:16])), true
					pending = pending[16:]
				}
			case err == syscall.EINTR:
			case err == syscall.EAGAIN:
				return false
			default:
				return true // end of input, or an error reading it
			}
		}
	}
	// deadline is when the command is killed: the resource's end less the
	// supervisor's slack or the one this watchdog measured, the larger.
	deadline := func(now int64) int64 { return end - max(slack, slackFor(0, win.recent(now))) }
	for {
		eof := drain()
		now := monotonic()
		win.note(now, now-due)
		if eof {
			if !armed {
				os.Exit(0) // never given a command
			}
			// The supervisor is done with the command before the
			// deadline. What is left in the group may be a wrapper (a
			// `lockd run` inside an `elect run` command) still ending a
			// command of its own in a group of its own: it gets SIGTERM
			// and up to the kill grace, never past the deadline, to end
			// before the whole group is killed.
			endGroup(deadline(now))
			ended = true
			break
		}
		report(now)
		sleep := int64(probeEvery)
		if armed {
			left := deadline(now) - now
			if left <= 0 {
				break
			}
			sleep = min(sleep, left)
		}
		due = now + sleep
		var r syscall.FdSet
		r.Bits[0] |= 1 // stdin
		tv := syscall.NsecToTimeval(sleep)
		_, _ = syscall.Select(1, &r, nil, nil, &tv) // readable, timed out or interrupted: look again
	}
	// At the deadline (not after the command's end): say when, for the
	// supervisor's accounts, then kill.
	if !ended {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(monotonic())|firedBit)
		_, _ = syscall.Write(1, b[:])
	}
	killOwnGroup()
}

// killOwnGroup ends the watchdog: SIGKILL to its whole group, itself
// included. Under realtime scheduling (watchdogRealtime) it first leaves
// the group for its supervisor's (setpgid: the group keeps its ID while
// the command's processes are in it), so that it outlives the kill by
// the time it takes to give what it killed the CPU to die (killGroup,
// sched_linux.go), and then exits. The kill itself is not delayed: one
// setpgid before it. Should the move fail (a supervisor in another
// session), the group, watchdog included, is killed as before.
func killOwnGroup() {
	self := os.Getpid()
	if realtimeOn() != 0 {
		if pg, err := syscall.Getpgid(syscall.Getppid()); err == nil && pg != self && syscall.Setpgid(0, pg) == nil {
			killGroup(self)
			os.Exit(1)
		}
	}
	_ = syscall.Kill(0, syscall.SIGKILL) // the whole group, the watchdog last
	os.Exit(1)
}

// firedBit marks a watchdog's last report: not a lateness but the
// CLOCK_MONOTONIC reading at which it killed its group at the deadline.
const firedBit = 1 << 63

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

	mu      sync.Mutex
	rep     *os.File // the watchdog's ready pipe, then its reports (nil once closed)
	pending []byte
	worst   int64 // the worst timer lateness the watchdog last reported
	fired   int64 // when the watchdog killed the group at its deadline (CLOCK_MONOTONIC; 0: not seen)
}

// PrepareWatch starts a watchdog with no deadline, in the background. A
// Watch that no command uses must be Cancelled.
func PrepareWatch() *Watch {
	l := &Watch{ready: make(chan struct{}), guarding: make(chan struct{})}
	go func() {
		defer close(l.ready)
		if _, ok := os.LookupEnv(watchdogEnv); ok {
			// Started as a watchdog, yet running as a tool: this
			// program's main does not call RunWatchdog first, and each
			// watchdog would start another without end.
			l.err = Exitf(ExitCannotExec, "cannot watch the command: this program was started as a watchdog (its main must call cli.RunWatchdog first)")
			return
		}
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
		wd.Env = append(append(os.Environ(), watchdogEnv+"="+unarmed), watchdogEnviron()...)
		wd.Stdin, wd.Stdout, wd.Stderr = r, readyW, os.Stderr
		// No Pdeathsig: a watchdog that died with this process (SIGKILL
		// reaches no handler) would leave its group unguarded, and a
		// command's background job, which Pdeathsig never reaches, would
		// run on after the resource is given back. The end of its input,
		// which this process's death closes, ends the group instead
		// (RunWatchdog), and a spare never armed exits on it.
		wd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
		// The pipe stays open for its reports (readReports).
		go func() {
			var b [1]byte
			_, _ = ready.Read(b[:])
			close(l.guarding)
		}()
		l.wd, l.w, l.rep = wd, w, ready
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
	l.closeReports()
}

// readReports reads what the watchdog reported of its timers' lateness
// since the last call, without waiting, and passes it on to the host's
// slack (noteReported). It returns the watchdog's last report.
func (l *Watch) readReports() int64 {
	select {
	case <-l.guarding: // its ready byte is read: what follows are reports
	default:
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rep == nil {
		return l.worst
	}
	rc, err := l.rep.SyscallConn()
	if err != nil {
		return l.worst
	}
	var got []int64
	_ = rc.Read(func(fd uintptr) bool {
		var b [256]byte
		for {
			n, _ := syscall.Read(int(fd), b[:])
			if n <= 0 {
				return true // nothing more now (EAGAIN), or the watchdog is gone: never wait
			}
			l.pending = append(l.pending, b[:n]...)
			for len(l.pending) >= 8 {
				got = append(got, int64(binary.LittleEndian.Uint64(l.pending[:8])))
				l.pending = l.pending[8:]
			}
		}
	})
	// Each report is the watchdog's worst over its own last SlackWindow,
	// and it repeats it once a bucket's span while the window holds it:
	// the newest report read here says all that still counts, and the
	// older ones, queued while nobody read them (a wait for a grant can
	// last minutes), are superseded. Noting them too, as of now, would
	// stretch the window over the whole wait.
	fresh := false
	for _, w := range got {
		if uint64(w)&firedBit != 0 {
			l.fired = int64(uint64(w) &^ firedBit)
			continue
		}
		l.worst, fresh = w, true
	}
	if fresh {
		noteReported(l.worst)
	}
	return l.worst
}

// closeReports reads the watchdog's last reports and closes their pipe.
func (l *Watch) closeReports() {
	l.readReports()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rep != nil {
		l.rep.Close()
		l.rep = nil
	}
}

// record is a deadline as the watchdog reads it: the resource's end and
// the slack to keep before it, both in nanoseconds (the end on
// CLOCK_MONOTONIC).
func record(end, slack int64) []byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(end))
	binary.LittleEndian.PutUint64(b[8:], uint64(slack))
	return b[:]
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
	return l.start(args, env, until, true)
}

// StartEarly is Start without waiting for the watchdog to be up: for a
// resource whose next holder does not wait for this command's deadline
// (lockd's lock goes on at once when its client dies, and its fencing
// token orders the holders), the watchdog is there to end the command's
// group when the wrapper dies or overstays a stop, not to keep a
// deadline that others count on. A watchdog still starting reads the
// deadline, and the end of its input, once it is up; until then the
// wrapper signals the command alone (Child.Signal).
func (l *Watch) StartEarly(args, env []string, until time.Time) (*Child, error) {
	return l.start(args, env, until, false)
}

func (l *Watch) start(args, env []string, until time.Time, await bool) (*Child, error) {
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
	//
	// The deadline is the resource's end less the kill slack (slack.go):
	// a lease whose usable part is gone when the command would start
	// starts nothing.
	if !time.Now().Before(until.Add(-KillSlack())) {
		return nil, ErrLeaseOver // a select below could pick either ready case
	}
	if await {
		select {
		case <-l.guarding:
		case <-time.After(time.Until(until.Add(-KillSlack()))):
			return nil, ErrLeaseOver
		}
	}
	// What the watchdog measured while it waited counts too.
	l.readReports()
	end, slack := monoOf(until), deadlineSlack()
	deadline := end - slack
	if monotonic() >= deadline {
		return nil, ErrLeaseOver
	}
	// The deadline goes first: the command never runs unwatched.
	l.armed = true
	if _, err := l.w.Write(record(end, slack)); err != nil {
		l.w.Close()
		return nil, ErrLeaseOver // the watchdog is gone
	}
	c, err := startChild(args, env, l.wd.Process.Pid, l)
	if err != nil {
		killGroup(l.wd.Process.Pid)
		l.w.Close()
		l.closeReports()
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ESRCH) {
			return nil, ErrLeaseOver // the watchdog's group is gone: it fired
		}
		return nil, err
	}
	c.end.Store(end)
	c.slack.Store(slack)
	// A watchdog fires only at the deadline, and a command that joined its
	// group before it fired dies with it. Past the deadline the watchdog
	// may have cleared the group before the command joined (a watchdog
	// that has exited but is not yet reaped still holds the group's ID),
	// or be clearing it right now (killing, not yet exited: on a starved
	// host that window is long): the lease is over either way, so the
	// group is killed here. The deadline is the one the watchdog keeps,
	// with the slack it measured itself.
	if !time.Now().Before(c.Deadline()) {
		killGroup(l.wd.Process.Pid)
		<-c.done
		return nil, ErrLeaseOver
	}
	return c, nil // when the command exits, sweep closes l.w: the watchdog clears the group, then exits
}

// Extend moves a leased child's deadline: until is the resource's new
// end, and the watchdog kills the command the kill slack before it
// (slack.go).
func (c *Child) Extend(until time.Time) {
	if c.lease == nil {
		return
	}
	c.watch.readReports()
	end, slack := monoOf(until), deadlineSlack()
	c.end.Store(end)
	c.slack.Store(slack)
	_, _ = c.lease.Write(record(end, slack))
}

// Deadline is when a leased command is killed unless extended: the
// resource's end less the kill slack, the wrapper's or the one its
// watchdog measured, whichever is larger. Zero for a command without a
// lease. A wrapper that finds its command dead at or past Deadline knows
// the watchdog killed it.
func (c *Child) Deadline() time.Time {
	if c.watch == nil {
		return time.Time{}
	}
	w := c.watch.readReports()
	return timeOf(c.end.Load() - max(c.slack.Load(), slackFor(0, w)))
}

// Fired is when the watchdog killed the command at its deadline, as the
// watchdog read its clock just before the kill; zero if it did not, or
// has not said so yet. Exact where Done is not: Done is seen when this
// process runs.
func (c *Child) Fired() time.Time {
	if c.watch == nil {
		return time.Time{}
	}
	c.watch.readReports()
	c.watch.mu.Lock()
	defer c.watch.mu.Unlock()
	if c.watch.fired == 0 {
		return time.Time{}
	}
	return timeOf(c.watch.fired)
}

// timeOf converts a CLOCK_MONOTONIC reading to a time.Time (monoOf's
// inverse).
func timeOf(mono int64) time.Time {
	b := monoBase()
	return b.t.Add(time.Duration(mono - b.mono))
}
