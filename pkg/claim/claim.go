// Package claim is the client side of a resource that a daemon on this
// host grants under a lease: a lock from lockd, a ticket from ticketd. It
// asks for the grant over the daemon's control socket and waits for it
// (saying on stderr why it waits, within --timeout or --nonblock), keeps
// the lease while a command runs or until standard input ends, and gives
// the grant back. The tools differ only in their requests, replies and
// status, which each describes with an Ask and a Keep; the flags of the
// commands that wait, and their exit codes, are the same for both:
//
//	75 (--conflict-exit-code) busy, or timed out while the service could decide
//	69 no daemon, a daemon that does not answer, or a service that cannot decide
//	64 the daemon refused the request
//	76 the grant was lost while it was held
//	128+n a signal ended the wait or the hold
package claim

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// WaitOpts are the flags of the commands that wait for a grant.
type WaitOpts struct {
	Socket   string        // the daemon's control socket
	Timeout  time.Duration // give up after this long (0: wait for ever)
	NonBlock bool          // give up unless the grant comes at once
	Conflict int           // exit code when busy or timed out
	Quiet    bool          // say nothing on stderr while waiting
}

// RunOpts are the flags and arguments of a command that runs a command
// under its grant.
type RunOpts struct {
	WaitOpts
	KillGrace time.Duration // after the grant is lost: SIGTERM, then SIGKILL after this long
	Shell     bool          // run the command through /bin/sh -c
	Args      []string      // the arguments: the tool's, then [--] command args...
}

// Help is what a tool's wait flags say that is its own.
type Help struct {
	Unavailable string // what else makes --timeout exit 69, after "the daemon does not answer"
	NonBlock    string // the usage of --nonblock
	Progress    string // what a waiting client says on stderr
}

// Flags are the flags of the commands that wait for a grant (all but
// --socket, which every client command of a tool has): --timeout,
// --nonblock, --conflict-exit-code and --quiet. WaitOptions reads them.
func Flags(h Help) []ucli.Flag {
	return []ucli.Flag{
		&ucli.DurationFlag{Name: "timeout", Usage: "give up this long after the command started (exit 75; 69 if the daemon does not answer" + h.Unavailable + "), counting its start-up; 0 waits for ever"},
		&ucli.BoolFlag{Name: "nonblock", Aliases: []string{"n"}, Usage: h.NonBlock},
		&ucli.IntFlag{Name: "conflict-exit-code", Aliases: []string{"E"}, Value: cli.ExitBusy, Usage: "exit code when busy or timed out"},
		&ucli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "say nothing on stderr while waiting (otherwise: after 1s, then every 15s, " + h.Progress + ")"},
	}
}

// WaitOptions reads the wait flags (Flags) and --socket.
func WaitOptions(c *ucli.Context) WaitOpts {
	return WaitOpts{Socket: c.String("socket"), Timeout: c.Duration("timeout"), NonBlock: c.Bool("nonblock"),
		Conflict: c.Int("conflict-exit-code"), Quiet: c.Bool("quiet")}
}

// RunOptions reads the flags of a command that runs a command under its grant
// (Flags, --kill-grace and --shell) and its arguments.
func RunOptions(c *ucli.Context) RunOpts {
	return RunOpts{WaitOpts: WaitOptions(c), KillGrace: c.Duration("kill-grace"), Shell: c.Bool("shell"), Args: c.Args().Slice()}
}

// Command is the command a client runs under its grant: args without a
// leading "--", through /bin/sh -c when shell is set. No command is a
// usage error (64) that shows usage.
func Command(args []string, shell bool, usage string) ([]string, error) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return nil, cli.Exitf(cli.ExitUsage, "no command: %s", usage)
	}
	if shell {
		args = []string{"/bin/sh", "-c", strings.Join(args, " ")}
	}
	return args, nil
}

// Client is one connection to a daemon's control socket, its replies
// (JSON lines, each an R) read into a channel that is closed when the
// daemon closes the connection.
type Client[R any] struct {
	cn      *cli.Conn
	replies <-chan R
	stop    func() // stops catching signals (set by Take)
}

// Dial connects to tool's daemon at socket: exit 69 when nobody serves it.
func Dial[R any](tool, socket string) (*Client[R], error) {
	cn, err := cli.DialControl(tool, socket)
	if err != nil {
		return nil, err
	}
	return &Client[R]{cn: cn, replies: cli.Lines[R](cn, 16)}, nil
}

// Send writes one request.
func (c *Client[R]) Send(req any) error { return c.cn.Send(req) }

// Replies are the daemon's replies, in order.
func (c *Client[R]) Replies() <-chan R { return c.replies }

// Close closes the connection (which gives back what it holds) and, after
// Take, stops catching signals.
func (c *Client[R]) Close() {
	c.cn.Close()
	if c.stop != nil {
		c.stop()
	}
}

// Query sends one request to tool's daemon at socket, on a connection
// of its own, and returns the first reply, waiting at most within for it:
// exit 69 when nobody serves the socket, or the daemon hangs up or does
// not answer in time.
func Query[R any](tool, socket string, req any, within time.Duration) (R, error) {
	var none R
	c, err := Dial[R](tool, socket)
	if err != nil {
		return none, err
	}
	defer c.Close()
	if err := c.Send(req); err != nil {
		return none, cli.Exitf(cli.ExitUnavailable, "lost the daemon: %v", err)
	}
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case r, ok := <-c.replies:
		if !ok {
			return none, cli.Exitf(cli.ExitUnavailable, "the daemon at %s did not answer", socket)
		}
		return r, nil
	case <-t.C:
		return none, cli.Exitf(cli.ExitUnavailable, "the daemon at %s did not answer within %v (paused?)", socket, within)
	}
}

// Ask is a tool's request for a grant and how to read what comes back.
type Ask[R, S any] struct {
	Tool    string // the tool, in messages
	Request any    // what asks for the grant
	What    string // what is waited for, in messages ("db", "a ticket")
	Prefix  string // before the messages of a --nonblock without an answer ("db: ")
	Decider string // who did not decide in time ("the lock service", "the member")
	// Fields reads a reply's event, reason and error. The events that
	// answer the request are Granted, "busy" (held elsewhere, and the
	// client would not wait: exit --conflict-exit-code with Busy),
	// "unavailable" (the service cannot decide now: exit 69 with
	// Unavailable and the reason) and "error" (refused: exit 64 with the
	// error); the client waits on through any other.
	Fields      func(R) (event, reason, refusal string)
	Granted     string // the event of the grant ("acquired")
	Busy        string // the message of a "busy" reply
	Unavailable string // the message of an "unavailable" reply, before its reason
	// Status asks the daemon at socket for its status, waiting at most
	// within; Describe says from it, for a waiting client, what the
	// daemon knows (err: the status could not be had). Both are called
	// while the client waits: after a second, every 15 s, and at the end.
	Status   func(socket string, within time.Duration) (S, error)
	Describe func(st S, err error) string
	// NoQuorum, when set, says whether a status shows a service that
	// cannot decide: a wait that times out then exits 69, not 75.
	NoQuorum func(S) bool
}

// Take catches the signals a client forwards, connects, asks for the
// grant and waits for it. While it waits it says why on stderr
// (cli.Wait). On success the caller closes the client, which also stops
// catching the signals; the errors carry the exit codes in the package
// comment.
func Take[R, S any](o WaitOpts, a Ask[R, S]) (*Client[R], R, <-chan os.Signal, error) {
	var none R
	sigs, stop := cli.NotifySignals()
	c, err := Dial[R](a.Tool, o.Socket)
	if err != nil {
		stop()
		return nil, none, nil, err
	}
	c.stop = stop
	got, err := await(c, o, a, sigs)
	if err != nil {
		c.Close()
		return nil, none, nil, err
	}
	return c, got, sigs, nil
}

// probe is a status question's answer.
type probe[S any] struct {
	st  S
	err error
	at  time.Time // when the question was asked
}

// await sends the request and waits for its answer (Take).
func await[R, S any](c *Client[R], o WaitOpts, a Ask[R, S], sigs <-chan os.Signal) (R, error) {
	var none R
	if err := c.Send(a.Request); err != nil {
		return none, cli.Exitf(cli.ExitUnavailable, "lost the daemon: %v", err)
	}
	w := cli.Wait{Timeout: o.Timeout, NonBlock: o.NonBlock, Quiet: o.Quiet, Since: cli.Started()}.Start()
	defer w.Stop()
	probes := make(chan probe[S], 1)
	for {
		select {
		case r, ok := <-c.replies:
			if !ok {
				return none, cli.Exitf(cli.ExitUnavailable, "the daemon closed the connection")
			}
			switch event, reason, refusal := a.Fields(r); event {
			case a.Granted:
				return r, nil
			case "busy":
				return none, cli.Exitf(o.Conflict, "%s", a.Busy)
			case "unavailable":
				return none, cli.Exitf(cli.ExitUnavailable, "%s%s", a.Unavailable, reason)
			case "error":
				return none, cli.Exitf(cli.ExitUsage, "%s", refusal)
			}
		case s := <-sigs:
			return none, &cli.ExitError{Code: cli.SignalCode(s)}
		case at := <-w.Report():
			// Asked aside, so that the wait keeps its deadline.
			go func(budget time.Duration) {
				st, err := a.Status(o.Socket, budget)
				probes <- probe[S]{st, err, at}
			}(w.ReportBudget())
		case p := <-probes:
			w.Say(a.Tool, a.What, a.Describe(p.st, p.err), p.at)
		case <-w.Expired():
			st, err := a.Status(o.Socket, w.ProbeBudget())
			why := a.Describe(st, err)
			switch {
			case o.NonBlock && err != nil:
				return none, cli.Exitf(cli.ExitUnavailable, "%sno answer within %v: %s", a.Prefix, cli.NonBlockLimit, why)
			case o.NonBlock && (o.Timeout <= 0 || o.Timeout > cli.NonBlockLimit):
				return none, cli.Exitf(cli.ExitUnavailable, "%s%s did not decide within %v: %s", a.Prefix, a.Decider, cli.NonBlockLimit, why)
			case err != nil || a.NoQuorum != nil && a.NoQuorum(st):
				return none, cli.Exitf(cli.ExitUnavailable, "timed out after %v waiting for %s: %s", w.Waited(), a.What, why)
			}
			return none, cli.Exitf(o.Conflict, "timed out after %v waiting for %s: %s", w.Waited(), a.What, why)
		}
	}
}

// Keep is how a client keeps a grant's lease.
type Keep[R any] struct {
	// Reply reads one reply from the daemon while the grant is held
	// (renewals extend the lease): lost says the grant is gone, and why.
	Reply func(R) (why string, lost bool)
	// Lease is judged every cli.CheckEvery when no reply waits to be
	// read (a renewal already sent is read first); once it is overdue,
	// the grant is lost because Expired.
	Lease   interface{ Overdue() bool }
	Expired string
}

// hold keeps the grant, and hands signals and the caller's other event
// to step until that says done. It returns why the grant was lost, or ""
// when step ended the hold.
func (c *Client[R]) hold(k Keep[R], sigs <-chan os.Signal, other <-chan struct{}, step func(sig os.Signal) (done bool)) (lost string) {
	tick := time.NewTicker(cli.CheckEvery)
	defer tick.Stop()
	for {
		select {
		case r, ok := <-c.replies:
			if !ok {
				return "the daemon went away"
			}
			if why, lost := k.Reply(r); lost {
				if why == "" {
					why = "the daemon took it back"
				}
				return why
			}
		case <-tick.C:
			if len(c.replies) > 0 {
				continue
			}
			if k.Lease.Overdue() {
				return k.Expired
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

// Run keeps the grant while child runs, passing it the signals caught by
// Take. When the child exits, release is sent and the child's exit code
// returned. When the grant is lost (what: "lock db", "ticket 3"), the
// child is stopped (SIGTERM, then SIGKILL after grace) and Run returns
// exit 76.
func (c *Client[R]) Run(k Keep[R], sigs <-chan os.Signal, child *cli.Child, grace time.Duration, tool, what string, release any) error {
	why := c.hold(k, sigs, child.Done(), func(s os.Signal) bool {
		if s != nil {
			child.Signal(s.(syscall.Signal))
			return false
		}
		return true // the command exited
	})
	if why != "" {
		fmt.Fprintf(os.Stderr, "%s: %s lost (%s): stopping the command\n", tool, what, why)
		child.Stop(grace)
		return cli.Exitf(cli.ExitLost, "%s lost while the command ran", what)
	}
	_ = c.Send(release)
	if watchdogKilled(child) {
		// This process could not renew in time (stopped, starved): the
		// watchdog ended the command at its deadline, the lease's end
		// less the kill slack. The command died of the grant's end, not
		// of its own accord: say so, as a lost grant (76), not 137.
		fmt.Fprintf(os.Stderr, "%s: %s lost (the lease ran out before this process renewed it): the watchdog stopped the command\n", tool, what)
		return cli.Exitf(cli.ExitLost, "%s lost while the command ran", what)
	}
	return &cli.ExitError{Code: child.ExitCode()}
}

// watchdogKilled says whether a leased command that has exited was killed
// by its watchdog: the watchdog said it fired, or (its report not read
// yet) the command died of SIGKILL at or past the deadline the watchdog
// keeps. A command that ended by itself keeps its own code, however late
// this process saw it.
func watchdogKilled(child *cli.Child) bool {
	if !child.Fired().IsZero() {
		return true
	}
	dl := child.Deadline()
	return !dl.IsZero() && child.ExitCode() == cli.SignalCode(syscall.SIGKILL) && !time.Now().Before(dl)
}

// Hold keeps the grant until standard input ends (release is sent,
// released called, nil returned), a signal comes (the same, then
// 128+signal) or the grant is lost (lost called with why, exit 76). Input
// is read and dropped.
func (c *Client[R]) Hold(k Keep[R], sigs <-chan os.Signal, what string, release any, lost func(why string), released func()) error {
	eof := make(chan struct{})
	in := os.Stdin
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
		}
		close(eof)
	}()
	var result error
	why := c.hold(k, sigs, eof, func(s os.Signal) bool {
		if s != nil {
			result = &cli.ExitError{Code: cli.SignalCode(s)}
		}
		return true
	})
	if why != "" {
		lost(why)
		return cli.Exitf(cli.ExitLost, "%s lost", what)
	}
	_ = c.Send(release)
	released()
	return result
}
