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
	Quiet    bool          // say nothing on stderr while waiting
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
// error: 75 busy or timed out (o.Conflict), 69 no daemon, a daemon that
// does not answer, or no quorum, 64 refused, 128+signal. While it waits it
// says why on stderr (cli.Wait).
func (c *client) acquire(o WaitOpts, name string, sigs <-chan os.Signal) (Reply, error) {
	if err := c.send(Request{Op: "acquire", Name: name, NonBlock: o.NonBlock}); err != nil {
		return Reply{}, cli.Exitf(cli.ExitUnavailable, "lost the daemon: %v", err)
	}
	w := cli.Wait{Timeout: o.Timeout, NonBlock: o.NonBlock, Quiet: o.Quiet}.Start()
	defer w.Stop()
	seen := &sightings{}
	probes := make(chan probe, 1)
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
		case at := <-w.Report():
			// Asked aside, so that the wait keeps its deadline.
			go func(budget time.Duration) {
				st, err := statusWithin(o.Socket, budget)
				probes <- probe{st, err, at}
			}(w.ReportBudget())
		case p := <-probes:
			w.Say(Tool, name, seen.describe(o.Socket, name, p), p.at)
		case <-w.Expired():
			st, err := statusWithin(o.Socket, w.ProbeBudget())
			why := seen.describe(o.Socket, name, probe{st, err, time.Now()})
			switch {
			case o.NonBlock && err != nil:
				return Reply{}, cli.Exitf(cli.ExitUnavailable, "%s: no answer within %v: %s", name, cli.NonBlockLimit, why)
			case o.NonBlock && (o.Timeout <= 0 || o.Timeout > cli.NonBlockLimit):
				return Reply{}, cli.Exitf(cli.ExitUnavailable, "%s: the lock service did not decide within %v: %s", name, cli.NonBlockLimit, why)
			case err != nil || st.Quorum != nil && !*st.Quorum:
				return Reply{}, cli.Exitf(cli.ExitUnavailable, "timed out after %v waiting for %s: %s", w.Waited(), name, why)
			}
			return Reply{}, cli.Exitf(o.Conflict, "timed out after %v waiting for %s: %s", w.Waited(), name, why)
		}
	}
}

// probe is a status question's answer.
type probe struct {
	st  *memberStatus
	err error
	at  time.Time // when the question was asked
}

// sightings remembers when a waiting client first saw each holder of its
// lock, so that it can say since when (at least) the holder has held it.
type sightings struct {
	key   string
	since time.Time
}

// describe says, for a waiting client, what the daemon knows of name:
// its holder, since when it was seen holding it, who else waits, and
// whether the service has a quorum.
func (s *sightings) describe(socket, name string, p probe) string {
	if p.err != nil {
		return fmt.Sprintf("the daemon at %s does not answer (stopped, or starved of CPU)", socket)
	}
	st := p.st
	var parts []string
	held := false
	for _, l := range st.Locks {
		if l.Name != name || l.Holder == 0 {
			continue
		}
		held = true
		key := fmt.Sprintf("%d/%d/%d", l.Holder, l.Client, l.Token)
		if key != s.key {
			s.key, s.since = key, time.Now()
		}
		h := fmt.Sprintf("held by member %d (client %d, token %d) since %s or earlier", l.Holder, l.Client, l.Token, s.since.Format("15:04:05"))
		if len(l.Queue) > 0 {
			h += fmt.Sprintf(", %d waiting", len(l.Queue))
		}
		parts = append(parts, h)
	}
	if !held {
		s.key = ""
		parts = append(parts, "not held as far as member "+strconv.FormatUint(uint64(st.ID), 10)+" knows")
	}
	switch {
	case st.Quorum != nil && !*st.Quorum:
		parts = append(parts, "no quorum (no coordinator with a majority, or too few members alive)")
	case st.Quorum != nil:
		parts = append(parts, "quorum yes")
	}
	if st.Algo == "central" {
		if st.Coordinator == 0 {
			parts = append(parts, "no coordinator")
		} else {
			parts = append(parts, fmt.Sprintf("coordinator %d term %d", st.Coordinator, st.Term))
		}
	}
	return strings.Join(parts, "; ")
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
	child.SetKillGrace(o.KillGrace)
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
