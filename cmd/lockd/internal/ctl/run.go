package ctl

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"github.com/roundtable-go/roundtable/pkg/proc"
)

// `lockd run` is one process start per critical section, so what it does
// between its start and its exit is most of what it costs. It runs as one
// goroutine that waits in ppoll(2) on every descriptor it cares about —
// the daemon's socket, a pipe its signals arrive on, the command's pidfd —
// instead of a goroutine per source and the runtime's poller: on a machine
// where a page fault costs 15–30 µs, the poller's set-up, the goroutines'
// stacks and the threads that run them cost about 7% of a run (0.8–1 ms
// of 12 on a 2-core VM).

// link is a control connection read only when ppoll says it is readable,
// so its descriptor stays blocking and needs no poller.
type link struct {
	fd      int
	buf     []byte  // bytes read that do not make a whole line yet
	pending []Reply // replies read and not yet taken
}

// dialLink connects to the daemon's control socket at path; exit 69 when
// nobody serves it.
func dialLink(path string) (*link, error) {
	fd, err := socketUnix(path)
	if err != nil {
		return nil, proc.Exitf(proc.ExitUnavailable, "no lockd daemon at %s (start one with 'lockd serve'): %v", path, err)
	}
	return &link{fd: fd, buf: make([]byte, 0, 1024)}, nil
}

func (l *link) close() { syscall.Close(l.fd) }

// send writes r as one line.
func (l *link) send(r Request) error {
	b := r.appendJSON(nil)
	for len(b) > 0 {
		n, err := syscall.Write(l.fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// maxLine bounds a reply line, as Conn's scanner does.
const maxLine = 1 << 20

// fill reads once (the socket is readable) and queues the whole lines'
// replies; io.EOF when the daemon has closed the connection.
func (l *link) fill() error {
	if cap(l.buf)-len(l.buf) < 512 {
		if len(l.buf) >= maxLine {
			return fmt.Errorf("a reply line longer than %d bytes", maxLine)
		}
		l.buf = append(make([]byte, 0, 2*cap(l.buf)), l.buf...)
	}
	var n int
	var err error
	for {
		n, err = syscall.Read(l.fd, l.buf[len(l.buf):cap(l.buf)])
		if err != syscall.EINTR {
			break
		}
	}
	switch {
	case err != nil:
		return err
	case n == 0:
		return io.EOF
	}
	l.buf = l.buf[:len(l.buf)+n]
	rest := l.buf
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		// Parsed in place: a Reply is big, and copies of it in the frames
		// of this call chain would grow the goroutine's stack.
		l.pending = append(l.pending, Reply{})
		if err := l.pending[len(l.pending)-1].parse(rest[:i]); err != nil {
			return err
		}
		rest = rest[i+1:]
	}
	l.buf = l.buf[:copy(l.buf, rest)]
	return nil
}

// take returns the next queued reply, or nil.
func (l *link) take() *Reply {
	if len(l.pending) == 0 {
		return nil
	}
	r := &l.pending[0]
	l.pending = l.pending[1:]
	return r
}

// pollFD is struct pollfd.
type pollFD struct {
	fd      int32
	events  int16
	revents int16
}

const (
	pollIn   = 0x1
	pollErr  = 0x8
	pollHup  = 0x10
	pollNval = 0x20 // not an open descriptor (a closed stdin)
)

func (p pollFD) ready() bool { return p.revents&(pollIn|pollErr|pollHup|pollNval) != 0 }

// wait blocks in ppoll(2) until one of fds is readable or timeout passes
// (for ever if timeout < 0). A signal's interruption returns early, with
// no descriptor ready.
func wait(fds []pollFD, timeout time.Duration) error {
	for i := range fds {
		fds[i].events, fds[i].revents = pollIn, 0
	}
	var ts *syscall.Timespec
	if timeout >= 0 {
		t := syscall.NsecToTimespec(int64(timeout))
		ts = &t
	}
	_, _, e := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
		uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if e != 0 && e != syscall.EINTR {
		return e
	}
	return nil
}

// sigPipe turns the signals `lockd run` catches into bytes on a pipe that
// ppoll can wait on: a goroutine takes them from the runtime's channel and
// writes each signal's number. A 0 byte says the command exited, for
// kernels without pidfds.
type sigPipe struct {
	r, w   int
	caught chan struct{} // closed once the signals are caught
}

// catchSignals catches SIGINT, SIGTERM and SIGHUP. The catching is done
// beside whatever the caller does next: the runtime enables each signal
// through a thread of its own, one round trip per signal, and doing that
// while the client connects and waits for the grant saves a `lockd run`
// about 0.3 ms. The caller waits for caught before starting the
// command, so from then on signals reach the command; one arriving
// earlier ends the process by its default action, as before any catching:
// no command runs yet, and the daemon drops the request when the
// connection closes.
func catchSignals() (*sigPipe, error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return nil, proc.Exitf(proc.ExitUnavailable, "pipe: %v", err)
	}
	s := &sigPipe{r: p[0], w: p[1], caught: make(chan struct{})}
	go func() {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		close(s.caught)
		for sig := range ch {
			s.post(byte(sig.(syscall.Signal)))
		}
	}()
	return s, nil
}

func (s *sigPipe) post(b byte) { syscall.Write(s.w, []byte{b}) }

// read returns what is on the pipe: signal numbers, 0 for a command's exit.
func (s *sigPipe) read(buf []byte) []byte {
	n, err := syscall.Read(s.r, buf)
	if err != nil || n < 0 {
		return nil
	}
	return buf[:n]
}

// acquire asks for name and waits for the answer: the grant, or an exit
// error — 75 (busy or timed out; code from --conflict-exit-code), 69 (no
// daemon, no quorum), 64 (refused) or 128+signal.
func (l *link) acquire(o WaitOpts, name string, sp *sigPipe) (*Reply, error) {
	if err := l.send(Request{Op: "acquire", Name: name, NonBlock: o.NonBlock}); err != nil {
		return nil, proc.Exitf(proc.ExitUnavailable, "lost the daemon: %v", err)
	}
	var deadline time.Time
	if o.Timeout > 0 {
		deadline = time.Now().Add(o.Timeout)
	}
	fds := []pollFD{{fd: int32(l.fd)}, {fd: int32(sp.r)}}
	var sigs [16]byte
	for {
		for r := l.take(); r != nil; r = l.take() {
			switch r.Event {
			case "acquired":
				return r, nil
			case "busy":
				return nil, proc.Exitf(o.Conflict, "%s is held by another process", name)
			case "error":
				return nil, proc.Exitf(proc.ExitUsage, "%s", r.Error)
			}
		}
		timeout := time.Duration(-1)
		if !deadline.IsZero() {
			timeout = max(time.Until(deadline), 0)
		}
		if err := wait(fds, timeout); err != nil {
			return nil, proc.Exitf(proc.ExitUnavailable, "ppoll: %v", err)
		}
		if fds[1].ready() {
			for _, b := range sp.read(sigs[:]) {
				if b != 0 {
					return nil, &proc.ExitError{Code: 128 + int(b)}
				}
			}
		}
		if fds[0].ready() {
			if err := l.fill(); err != nil {
				return nil, proc.Exitf(proc.ExitUnavailable, "the daemon closed the connection")
			}
			continue
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			if noQuorum(o.Socket) {
				return nil, proc.Exitf(proc.ExitUnavailable, "timed out waiting for %s: the daemon has no quorum", name)
			}
			return nil, proc.Exitf(o.Conflict, "timed out waiting for %s", name)
		}
	}
}

// command is the child `lockd run` supervises.
type command struct {
	pid, pidfd int
	ws         syscall.WaitStatus
	exited     bool
	status     chan syscall.WaitStatus // without a pidfd: from the goroutine in wait4
}

// reap collects the command's exit status if it has exited.
func (c *command) reap() bool {
	if c.status != nil {
		// The goroutine in wait4 reaps it: a wait4 here could take the
		// status from under it, or find the child gone without one.
		if !c.exited {
			select {
			case c.ws = <-c.status:
				c.exited = true
			default:
			}
		}
		return c.exited
	}
	if !c.exited {
		for {
			pid, err := syscall.Wait4(c.pid, &c.ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			c.exited = pid == c.pid || err == syscall.ECHILD
			break
		}
	}
	return c.exited
}

// Run is 'lockd run': acquire the lock, run the command with LOCKD_NAME
// and LOCKD_TOKEN while holding it, release it when the command exits.
// The result carries the exit code (see proc): the command's own, 75
// busy or timed out, 76 lost, 69 no daemon or no quorum.
func Run(o RunOpts) error {
	name, err := CheckName(o.Args)
	if err != nil {
		return err
	}
	args := o.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return proc.Exitf(proc.ExitUsage, "no command: lockd run NAME -- command args...")
	}
	if o.Shell {
		args = []string{"/bin/sh", "-c", joinArgs(args)}
	}
	// The state lives on the heap and each step is a method with a small
	// frame: `lockd run` runs on the main goroutine, whose stack would
	// otherwise grow (a new stack and its page faults) for one big frame.
	r := &runner{o: o, name: name}
	if err := r.start(args); err != nil {
		return err
	}
	defer r.ln.close()
	return r.supervise()
}

// spawn starts the command (a variable for the test of the path without
// a pidfd).
var spawn = proc.Spawn

// runner is one `lockd run` past its argument checks.
type runner struct {
	o     RunOpts
	name  string
	sp    *sigPipe
	ln    *link
	lease *Lease
	cmd   command
	fds   [3]pollFD // the socket, the signal pipe, the command's pidfd
	buf   [16]byte
}

// acquire catches signals, connects and waits for the grant; on success
// the link stays open (the caller closes it) and the lease has begun.
func (r *runner) acquire() (*Reply, error) {
	var err error
	if r.sp, err = catchSignals(); err != nil {
		return nil, err
	}
	if r.ln, err = dialLink(r.o.Socket); err != nil {
		return nil, err
	}
	got, err := r.ln.acquire(r.o.WaitOpts, r.name, r.sp)
	if err != nil {
		r.ln.close()
		return nil, err
	}
	<-r.sp.caught
	r.lease = NewLease(*got)
	return got, nil
}

// start acquires the lock and starts the command.
func (r *runner) start(args []string) error {
	got, err := r.acquire()
	if err != nil {
		return err
	}
	r.cmd.pid, r.cmd.pidfd, err = spawn(args, []string{"LOCKD_NAME=" + r.name, "LOCKD_TOKEN=" + strconv.FormatUint(got.Token, 10)})
	if err != nil {
		r.ln.close()
		return err
	}
	// (ppoll passes over a negative descriptor: without a pidfd, a
	// goroutine waits in wait4 and says so on the signal pipe.)
	r.fds = [3]pollFD{{fd: int32(r.ln.fd)}, {fd: int32(r.sp.r)}, {fd: int32(r.cmd.pidfd)}}
	if r.cmd.pidfd < 0 {
		cmd, sp := &r.cmd, r.sp
		cmd.status = make(chan syscall.WaitStatus, 1)
		go func() {
			var ws syscall.WaitStatus
			for {
				if _, err := syscall.Wait4(cmd.pid, &ws, 0, nil); err != syscall.EINTR {
					break
				}
			}
			cmd.status <- ws
			sp.post(0)
		}()
	}
	return nil
}

// every is how often the lease is checked: it runs out on this process's
// clock even when the daemon cannot say so.
const every = 10 * time.Millisecond

// watch holds the lock while waiting in ppoll: it takes the daemon's
// extensions, judges the lease every 10 ms, and hands each caught signal
// to onSignal and the readiness of the third descriptor to onThird
// (either ends the wait by returning done). It returns the reason when the
// lock is lost, or "" and the callback's error.
func (r *runner) watch(onSignal func(syscall.Signal) (bool, error), onThird func() (bool, error)) (string, error) {
	next := time.Now().Add(every)
	for {
		if why, ok := r.replies(); !ok {
			return why, nil
		}
		if err := wait(r.fds[:], max(time.Until(next), 0)); err != nil {
			return fmt.Sprintf("ppoll: %v", err), nil
		}
		if r.fds[1].ready() {
			for _, b := range r.sp.read(r.buf[:]) {
				if done, err := onSignal(syscall.Signal(b)); done {
					return "", err
				}
			}
		}
		if done, err := onThird(); done {
			return "", err
		}
		if r.fds[0].ready() {
			// Read what the daemon sent before judging the lease.
			if err := r.ln.fill(); err != nil {
				return "the daemon went away", nil
			}
			continue
		}
		if now := time.Now(); !now.Before(next) {
			next = now.Add(every)
			if r.lease.Overdue() {
				return "lease ran out without renewal", nil
			}
		}
	}
}

// supervise waits for the command's exit, passing signals on, and stops
// the command if the lock is lost.
func (r *runner) supervise() error {
	why, err := r.watch(func(s syscall.Signal) (bool, error) {
		if s != 0 && !r.cmd.exited { // 0: the command's exit, without a pidfd
			_ = syscall.Kill(-r.cmd.pid, s)
		}
		return false, nil
	}, func() (bool, error) {
		if (r.cmd.status != nil || r.fds[2].ready()) && r.cmd.reap() {
			_ = r.ln.send(Request{Op: "release", Name: r.name})
			return true, &proc.ExitError{Code: proc.StatusCode(r.cmd.ws)}
		}
		return false, nil
	})
	if why != "" {
		return r.lost(why)
	}
	return err
}

// Hold is 'lockd hold': acquire name, call acquired with the grant, and
// hold the lock until standard input ends (released, nil), a signal comes
// (released, 128+signal) or the lock is lost (the "lost" reply, exit 76).
func Hold(o WaitOpts, name string, acquired func(Reply)) (Reply, error) {
	r := &runner{o: RunOpts{WaitOpts: o}, name: name}
	got, err := r.acquire()
	if err != nil {
		return Reply{}, err
	}
	defer r.ln.close()
	acquired(*got)
	r.fds = [3]pollFD{{fd: int32(r.ln.fd)}, {fd: int32(r.sp.r)}, {fd: 0}}
	release := func(err error) (bool, error) {
		_ = r.ln.send(Request{Op: "release", Name: name})
		return true, err
	}
	why, err := r.watch(func(s syscall.Signal) (bool, error) {
		return release(&proc.ExitError{Code: 128 + int(s)})
	}, func() (bool, error) {
		if !r.fds[2].ready() {
			return false, nil
		}
		// Input is read and dropped; its end (or a descriptor that cannot
		// be read) releases.
		if n, err := syscall.Read(0, r.buf[:]); n <= 0 && err != syscall.EINTR && err != syscall.EAGAIN {
			return release(nil)
		}
		return false, nil
	})
	if why != "" {
		return Reply{Event: "lost", Name: name, Token: got.Token, Reason: why}, proc.Exitf(proc.ExitLost, "lock %s lost", name)
	}
	return Reply{Event: "released", Name: name, Token: got.Token}, err
}

// replies takes the daemon's queued replies: extensions of the lease, or
// the news that the lock is lost (ok false, with the reason).
func (r *runner) replies() (why string, ok bool) {
	for {
		rep := r.ln.take()
		if rep == nil {
			return "", true
		}
		switch {
		case rep.Event == "valid" && rep.Name == r.name:
			r.lease.Extend(*rep)
		case rep.Event == "lost" && rep.Name == r.name:
			return rep.Reason, false
		}
	}
}

// lost stops the command and returns exit 76.
func (r *runner) lost(why string) error {
	fmt.Fprintf(os.Stderr, "lockd: lock %s lost (%s): stopping the command\n", r.name, why)
	r.cmd.stop(r.o.KillGrace, r.fds[1:], r.sp)
	return proc.Exitf(proc.ExitLost, "lock %s lost while the command ran", r.name)
}

// stop sends SIGTERM to the command's process group, waits up to grace
// for it to exit, then sends SIGKILL, and returns once it has exited.
// fds are the signal pipe's and the pidfd's entries (without a pidfd,
// the pipe's 0 byte says the command exited).
func (c *command) stop(grace time.Duration, fds []pollFD, sp *sigPipe) {
	_ = syscall.Kill(-c.pid, syscall.SIGTERM)
	end := time.Now().Add(grace)
	var buf [16]byte
	for !c.reap() && time.Now().Before(end) {
		if wait(fds, time.Until(end)) != nil {
			break
		}
		if fds[0].ready() {
			sp.read(buf[:]) // signals: the command is being stopped anyway
		}
	}
	// The leader gone or not, nothing it spawned in its group may linger.
	_ = syscall.Kill(-c.pid, syscall.SIGKILL)
	if c.status != nil && !c.exited {
		c.ws, c.exited = <-c.status, true
	}
	for !c.exited {
		pid, err := syscall.Wait4(c.pid, &c.ws, 0, nil)
		c.exited = pid == c.pid || err != nil && err != syscall.EINTR
	}
}
