package lockd

import (
	"bufio"
	"io"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// Session is 'lockd session': one connection to the daemon for many
// acquisitions, driven by command lines read from in, for scripts that
// take locks in a loop (a coprocess costs one process start, not one per
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
// End of input releases everything and returns nil; a signal releases
// everything and exits 128+signal; if the daemon goes away the session
// reports each held lock lost and exits 76 (69 if it held none).
func Session(socket string, in io.Reader, out *cli.Output) error {
	sigs, stop := cli.NotifySignals()
	defer stop()
	c, err := dial(socket)
	if err != nil {
		return err
	}
	defer c.close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	s := &session{c: c, out: out, holding: map[string]*held{}, late: cli.NewLease(time.Time{})}
	check := time.NewTicker(CheckEvery)
	defer check.Stop()
	input := lines // nil while a command waits for its answer
	for {
		select {
		case line, ok := <-input:
			if !ok {
				s.releaseAll()
				return nil
			}
			waiting, err := s.command(line)
			if err != nil {
				return err
			}
			if waiting {
				input = nil
			}
		case r, ok := <-c.replies:
			if !ok {
				return s.daemonGone()
			}
			if s.reply(r) {
				input = lines
			}
		case <-s.expire:
			// Withdraw the request: a grant already on its way is released
			// by this as well, and its answer, no longer awaited, ignored.
			_ = c.send(Request{Op: "release", Name: s.pending})
			s.say(Reply{Event: "timeout", Name: s.pending})
			s.answered()
			input = lines
		case <-check.C:
			if len(c.replies) == 0 { // read the daemon's renewals first
				s.checkLeases()
			}
		case sig := <-sigs:
			s.releaseAll()
			return &cli.ExitError{Code: cli.SignalCode(sig)}
		}
	}
}

type held struct {
	token uint64
	lease *Lease
}

// session is the state of one Session.
type session struct {
	c       *client
	out     *cli.Output
	holding map[string]*held
	// The checks every CheckEvery cost the same whatever the session
	// holds (a session may hold thousands of locks): floor is the earliest
	// end of any held lock's lease (or earlier: a lock given up leaves it
	// be), so a check before it looks at none; late, a lease without end,
	// tells a check that comes late (this process was stopped or starved)
	// to read what the daemon sent first, as cli.Lease does.
	floor   time.Time
	late    *cli.Lease
	pending string           // the lock an acquire or try waits for
	expire  <-chan time.Time // the pending acquire's timeout
	timer   *time.Timer
}

func (s *session) say(r Reply) { Print(s.out, r) }

func (s *session) answered() {
	if s.timer != nil {
		s.timer.Stop()
	}
	s.pending, s.expire, s.timer = "", nil, nil
}

func (s *session) releaseAll() {
	for name := range s.holding {
		_ = s.c.send(Request{Op: "release", Name: name})
	}
}

// command takes one input line; waiting is true when it sent a request
// whose answer must come before the next line is read.
func (s *session) command(line string) (waiting bool, err error) {
	words := strings.Fields(line)
	if len(words) == 0 {
		return false, nil
	}
	op, name, wait := words[0], "", time.Duration(0)
	if len(words) > 1 {
		name = words[1]
	}
	if op == "acquire" && len(words) == 3 {
		d, err := time.ParseDuration(words[2])
		if err != nil || d <= 0 {
			s.say(Reply{Event: "error", Name: name, Error: "bad timeout " + words[2] + " (a duration such as 500ms or 5s)"})
			return false, nil
		}
		wait = d
	} else if len(words) > 2 {
		s.say(Reply{Event: "error", Name: name, Error: "too many words: " + line})
		return false, nil
	}
	if op != "acquire" && op != "try" && op != "release" {
		s.say(Reply{Event: "error", Error: "unknown command " + op + " (acquire, try or release NAME)"})
		return false, nil
	}
	if _, err := CheckName([]string{name}); err != nil {
		s.say(Reply{Event: "error", Error: err.Error()})
		return false, nil
	}
	if op == "release" {
		h := s.holding[name]
		if h == nil {
			s.say(Reply{Event: "error", Name: name, Error: "this session does not hold " + name})
			return false, nil
		}
		// The daemon reads this connection in order: once sent, a later
		// acquire of NAME by anyone queues behind it.
		_ = s.c.send(Request{Op: "release", Name: name})
		delete(s.holding, name)
		s.say(Reply{Event: "released", Name: name, Token: h.token})
		return false, nil
	}
	if s.holding[name] != nil {
		s.say(Reply{Event: "error", Name: name, Error: "this session already holds " + name})
		return false, nil
	}
	if err := s.c.send(Request{Op: "acquire", Name: name, NonBlock: op == "try"}); err != nil {
		return false, cli.Exitf(cli.ExitUnavailable, "lost the daemon: %v", err)
	}
	s.pending = name
	if wait > 0 {
		s.timer = time.NewTimer(wait)
		s.expire = s.timer.C
	}
	return true, nil
}

// reply takes one of the daemon's replies; it reports true when it
// answered the pending command.
func (s *session) reply(r Reply) bool {
	switch r.Event {
	case "acquired":
		if r.Name == s.pending {
			s.answered()
			h := &held{token: r.Token, lease: NewLease(r)}
			s.holding[r.Name] = h
			if u := h.lease.Until(); s.floor.IsZero() || u.Before(s.floor) {
				s.floor = u
			}
			s.say(r)
			return true
		}
	case "busy", "unavailable", "error":
		if s.pending != "" && (r.Name == s.pending || r.Event == "error") {
			s.answered()
			s.say(r)
			return true
		}
	case "valid":
		// One reply every eighth of a lease speaks for every lock held,
		// each to its own end: until_ns, or the one "each" lists for the
		// few whose renewal lags.
		var each map[string]int64
		if len(r.Each) > 0 {
			each = make(map[string]int64, len(r.Each))
			for _, e := range r.Each {
				each[e.Name] = e.UntilNS
			}
		}
		s.floor = time.Time{}
		for name, h := range s.holding {
			if r.Name == "" || r.Name == name {
				until, own := each[name]
				if !own {
					until = r.UntilNS
				}
				h.lease.ExtendTo(r, until)
			}
			if u := h.lease.Until(); s.floor.IsZero() || u.Before(s.floor) {
				s.floor = u
			}
		}
	case "lost":
		if s.holding[r.Name] != nil {
			delete(s.holding, r.Name)
			s.say(r)
		}
	}
	return false
}

// checkLeases gives up every held lock whose lease ran out.
func (s *session) checkLeases() {
	if !s.late.Overdue() {
		return // this check came late: read the daemon's renewals first
	}
	now := time.Now()
	if now.Before(s.floor) || len(s.holding) == 0 {
		return
	}
	s.floor = time.Time{}
	for name, h := range s.holding {
		if u := h.lease.Until(); now.After(u) {
			_ = s.c.send(Request{Op: "release", Name: name})
			delete(s.holding, name)
			s.say(Reply{Event: "lost", Name: name, Token: h.token, Reason: "lease ran out without renewal"})
		} else if s.floor.IsZero() || u.Before(s.floor) {
			s.floor = u
		}
	}
}

func (s *session) daemonGone() error {
	if len(s.holding) == 0 {
		return cli.Exitf(cli.ExitUnavailable, "the daemon went away")
	}
	for name, h := range s.holding {
		s.say(Reply{Event: "lost", Name: name, Token: h.token, Reason: "the daemon went away"})
	}
	return cli.Exitf(cli.ExitLost, "the daemon went away while the session held a lock")
}
