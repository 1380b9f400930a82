package lockd

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// WaitOpts are the flags of the commands that wait for a lock.
type WaitOpts struct {
	Socket   string        // the daemon's control socket
	Timeout  time.Duration // give up after this long (0: wait for ever)
	NonBlock bool          // give up at once if the lock is held
	Conflict int           // exit code when busy or timed out
}

// RunOpts is a parsed 'lockd run'.
type RunOpts struct {
	WaitOpts
	KillGrace time.Duration // after the lock is lost: SIGTERM, then SIGKILL after this long
	Shell     bool          // run the command through /bin/sh -c
	Args      []string      // NAME [--] command args...
}

// client is one connection to the daemon, its replies read into a channel
// (closed when the daemon closes the connection).
type client struct {
	cn          *cli.Conn
	replies     <-chan Reply
	stopSignals func() // set by take
}

// dial connects to the daemon at socket; exit 69 when nobody serves it.
func dial(socket string) (*client, error) {
	cn, err := cli.DialControl(Tool, socket)
	if err != nil {
		return nil, err
	}
	return &client{cn: cn, replies: cli.Lines[Reply](cn, 16)}, nil
}

func (c *client) send(r Request) error { return c.cn.Send(r) }
func (c *client) close() {
	c.cn.Close()
	if c.stopSignals != nil {
		c.stopSignals()
	}
}

// acquire asks for name and waits for the grant, or returns an exit
// error: 75 busy or timed out (o.Conflict), 69 no daemon or no quorum, 64
// refused, 128+signal.
func (c *client) acquire(o WaitOpts, name string, sigs <-chan os.Signal) (Reply, error) {
	if err := c.send(Request{Op: "acquire", Name: name, NonBlock: o.NonBlock}); err != nil {
		return Reply{}, cli.Exitf(cli.ExitUnavailable, "lost the daemon: %v", err)
	}
	var expire <-chan time.Time
	if o.Timeout > 0 {
		t := time.NewTimer(o.Timeout)
		defer t.Stop()
		expire = t.C
	}
	// A wait that is still a wait after a second says so on stderr if the
	// daemon has no quorum: the script's author should know it may last.
	check := time.NewTimer(time.Second)
	defer check.Stop()
	for {
		select {
		case r, ok := <-c.replies:
			if !ok {
				return Reply{}, cli.Exitf(cli.ExitUnavailable, "the daemon closed the connection")
			}
			switch r.Event {
			case "acquired":
				return r, nil
			case "busy":
				return Reply{}, cli.Exitf(o.Conflict, "%s is held by another process", name)
			case "unavailable":
				return Reply{}, cli.Exitf(cli.ExitUnavailable, "%s: the lock service cannot decide now: %s", name, r.Reason)
			case "error":
				return Reply{}, cli.Exitf(cli.ExitUsage, "%s", r.Error)
			}
		case s := <-sigs:
			return Reply{}, &cli.ExitError{Code: cli.SignalCode(s)}
		case <-check.C:
			if st, err := status(o.Socket); err == nil && st.Quorum != nil && !*st.Quorum {
				fmt.Fprintf(os.Stderr, "lockd: waiting for %s: the daemon has no quorum (no coordinator with a majority, or too few members alive)\n", name)
			}
		case <-expire:
			if noQuorum(o.Socket) {
				return Reply{}, cli.Exitf(cli.ExitUnavailable, "timed out waiting for %s: the daemon has no quorum", name)
			}
			return Reply{}, cli.Exitf(o.Conflict, "timed out waiting for %s", name)
		}
	}
}

// noQuorum asks the daemon, on a second connection, whether it can grant
// at all (central: it follows a coordinator with a majority; voting: m
// members are alive): a timeout without a quorum is exit 69, not 75.
func noQuorum(socket string) bool {
	st, err := status(socket)
	if err != nil {
		return true
	}
	return st.Quorum != nil && !*st.Quorum
}

// hold keeps a granted lock: it extends the lease from the daemon's
// "valid" replies and judges it every CheckEvery, and hands signals and
// the other events of the caller's select to the caller's step function
// until that says done. It returns the reason when the lock is lost.
func (c *client) hold(name string, grant Reply, sigs <-chan os.Signal, other <-chan struct{}, step func(sig os.Signal) (done bool)) (lost string) {
	lease := NewLease(grant)
	tick := time.NewTicker(CheckEvery)
	defer tick.Stop()
	for {
		select {
		case r, ok := <-c.replies:
			switch {
			case !ok:
				return "the daemon went away"
			case r.Event == "valid" && (r.Name == "" || r.Name == name):
				lease.Extend(r)
			case r.Event == "lost" && r.Name == name:
				return r.Reason
			}
		case <-tick.C:
			// Read what the daemon sent before judging the lease.
			if len(c.replies) == 0 && lease.Overdue() {
				return "lease ran out without renewal"
			}
		case s := <-sigs:
			if step(s) {
				return ""
			}
		case <-other:
			if step(nil) {
				return ""
			}
		}
	}
}

// take catches Signals, connects and waits for the grant of name: what
// run and hold start with. On success the caller closes the client, which
// also stops catching the signals.
func take(o WaitOpts, name string) (*client, Reply, <-chan os.Signal, error) {
	sigs, stop := cli.NotifySignals()
	c, err := dial(o.Socket)
	if err != nil {
		stop()
		return nil, Reply{}, nil, err
	}
	c.stopSignals = stop
	got, err := c.acquire(o, name, sigs)
	if err != nil {
		c.close()
		return nil, Reply{}, nil, err
	}
	return c, got, sigs, nil
}

// Run is 'lockd run': acquire the lock, run the command with LOCKD_NAME
// and LOCKD_TOKEN while holding it, release it when the command exits.
// The result carries the exit code: the command's own, 75 busy or timed
// out, 76 lost (the command is stopped: SIGTERM, then SIGKILL after
// KillGrace), 69 no daemon or no quorum.
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
		return cli.Exitf(cli.ExitUsage, "no command: lockd run NAME -- command args...")
	}
	if o.Shell {
		args = []string{"/bin/sh", "-c", strings.Join(args, " ")}
	}
	c, got, sigs, err := take(o.WaitOpts, name)
	if err != nil {
		return err
	}
	defer c.close()
	child, err := cli.StartChild(args, []string{"LOCKD_NAME=" + name, "LOCKD_TOKEN=" + strconv.FormatUint(got.Token, 10)})
	if err != nil {
		return err
	}
	why := c.hold(name, got, sigs, child.Done(), func(s os.Signal) bool {
		if s != nil {
			child.Signal(s.(syscall.Signal))
			return false
		}
		return true // the command exited
	})
	if why != "" {
		fmt.Fprintf(os.Stderr, "lockd: lock %s lost (%s): stopping the command\n", name, why)
		child.Stop(o.KillGrace)
		return cli.Exitf(cli.ExitLost, "lock %s lost while the command ran", name)
	}
	_ = c.send(Request{Op: "release", Name: name})
	return &cli.ExitError{Code: child.ExitCode()}
}

// Hold is 'lockd hold': acquire name, print the grant, and hold the lock
// until standard input ends (released, nil), a signal comes (released,
// 128+signal) or the lock is lost (printed, exit 76).
func Hold(o WaitOpts, name string, out *cli.Output) error {
	c, got, sigs, err := take(o, name)
	if err != nil {
		return err
	}
	defer c.close()
	Print(out, got)
	eof := make(chan struct{})
	go func() {
		// Input is read and dropped; its end releases.
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
		}
		close(eof)
	}()
	var result error
	why := c.hold(name, got, sigs, eof, func(s os.Signal) bool {
		if s != nil {
			result = &cli.ExitError{Code: cli.SignalCode(s)}
		}
		return true
	})
	if why != "" {
		Print(out, Reply{Event: "lost", Name: name, Token: got.Token, Reason: why})
		return cli.Exitf(cli.ExitLost, "lock %s lost", name)
	}
	_ = c.send(Request{Op: "release", Name: name})
	Print(out, Reply{Event: "released", Name: name, Token: got.Token})
	return result
}
