package main

import (
	"bufio"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/cmd/lockd/internal/ctl"
	"github.com/roundtable-go/roundtable/pkg/cli"
)

// sessionCmd is 'lockd session': one connection to the daemon for many
// acquisitions, driven by command lines on stdin, for scripts that take
// locks in a loop (a coprocess costs one process start, not one per
// acquisition). Commands are taken one at a time, and each gets its answer
// line before the next is read, so answers come in the commands' order;
// "lost" lines come on their own when a held lock's lease runs out or the
// daemon revokes it.
//
//	acquire NAME [D]  wait for NAME (at most D, a duration such as 5s):
//	                  "acquired NAME token T", or "timeout NAME"
//	try NAME          do not wait: "acquired NAME token T" or "busy NAME"
//	release NAME      "released NAME token T"
//
// End of input releases everything and exits 0; a signal releases
// everything and exits 128+signal; if the daemon goes away the session
// reports each held lock lost and exits 76 (69 if it held none).
func sessionCmd(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "session takes no arguments (commands come on stdin), got %q", c.Args().First())
	}
	jsonOut := c.Bool(cli.FlagJSON)
	out := cli.NewOutput(os.Stdout, jsonOut)
	say := func(r ctl.Reply) { emit(out, jsonOut, r) }
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	cn, err := ctl.Dial(c.String("socket"))
	if err != nil {
		return err
	}
	defer cn.Close()
	replies := cn.Replies()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()

	type held struct {
		token uint64
		lease *ctl.Lease
	}
	holding := map[string]*held{}
	pending := ""               // the lock an acquire or try waits for
	in := lines                 // nil while a command waits for its answer
	var expire <-chan time.Time // an acquire's timeout
	releaseAll := func() {
		for name := range holding {
			_ = cn.Send(ctl.Request{Op: "release", Name: name})
		}
	}
	check := time.NewTicker(10 * time.Millisecond)
	defer check.Stop()
	for {
		select {
		case line, ok := <-in:
			if !ok {
				releaseAll()
				return nil
			}
			words := strings.Fields(line)
			if len(words) == 0 {
				continue
			}
			op, name, wait := words[0], "", time.Duration(0)
			if len(words) > 1 {
				name = words[1]
			}
			if op == "acquire" && len(words) == 3 {
				d, err := time.ParseDuration(words[2])
				if err != nil || d <= 0 {
					say(ctl.Reply{Event: "error", Name: name, Error: "bad timeout " + words[2] + " (a duration such as 500ms or 5s)"})
					continue
				}
				wait = d
			} else if len(words) > 2 {
				say(ctl.Reply{Event: "error", Name: name, Error: "too many words: " + line})
				continue
			}
			if op != "acquire" && op != "try" && op != "release" {
				say(ctl.Reply{Event: "error", Error: "unknown command " + op + " (acquire, try or release NAME)"})
				continue
			}
			if _, err := ctl.CheckName([]string{name}); err != nil {
				say(ctl.Reply{Event: "error", Error: err.Error()})
				continue
			}
			switch op {
			case "acquire", "try":
				if holding[name] != nil {
					say(ctl.Reply{Event: "error", Name: name, Error: "this session already holds " + name})
					continue
				}
				if err := cn.Send(ctl.Request{Op: "acquire", Name: name, NonBlock: op == "try"}); err != nil {
					return cli.Exitf(cli.ExitUnavailable, "lost the daemon: %v", err)
				}
				pending, in = name, nil
				if wait > 0 {
					expire = time.After(wait)
				}
			case "release":
				h := holding[name]
				if h == nil {
					say(ctl.Reply{Event: "error", Name: name, Error: "this session does not hold " + name})
					continue
				}
				// The daemon reads this connection in order: once sent, a
				// later acquire of NAME by anyone queues behind it.
				_ = cn.Send(ctl.Request{Op: "release", Name: name})
				delete(holding, name)
				say(ctl.Reply{Event: "released", Name: name, Token: h.token})
			}
		case r, ok := <-replies:
			if !ok {
				if len(holding) == 0 {
					return cli.Exitf(cli.ExitUnavailable, "the daemon went away")
				}
				for name, h := range holding {
					say(ctl.Reply{Event: "lost", Name: name, Token: h.token, Reason: "the daemon went away"})
				}
				return cli.Exitf(cli.ExitLost, "the daemon went away while the session held a lock")
			}
			switch r.Event {
			case "acquired":
				if r.Name == pending {
					pending, in, expire = "", lines, nil
					holding[r.Name] = &held{token: r.Token, lease: ctl.NewLease(r)}
					say(r)
				}
			case "busy", "error":
				if pending != "" && (r.Name == pending || r.Event == "error") {
					pending, in, expire = "", lines, nil
					say(r)
				}
			case "valid":
				if h := holding[r.Name]; h != nil {
					h.lease.Extend(r)
				}
			case "lost":
				if holding[r.Name] != nil {
					delete(holding, r.Name)
					say(r)
				}
			}
		case <-expire:
			// Withdraw the request: a grant already on its way is released
			// by this as well, and its answer, no longer awaited, ignored.
			_ = cn.Send(ctl.Request{Op: "release", Name: pending})
			say(ctl.Reply{Event: "timeout", Name: pending})
			pending, in, expire = "", lines, nil
		case <-check.C:
			if len(replies) > 0 {
				continue // read the daemon's renewals first
			}
			for name, h := range holding {
				if h.lease.Overdue() {
					_ = cn.Send(ctl.Request{Op: "release", Name: name})
					delete(holding, name)
					say(ctl.Reply{Event: "lost", Name: name, Token: h.token, Reason: "lease ran out without renewal"})
				}
			}
		case s := <-sigs:
			releaseAll()
			return &cli.ExitError{Code: 128 + int(s.(syscall.Signal))}
		}
	}
}
