// Package electd is elect's service: one member of an election on real
// sockets, and the command it runs while this member leads (under a lease,
// unless the lease is 0). It decides nothing: who leads, and when a lease
// is held or lost, is pkg/election's; the service moves the machine's
// events to stdout, keeps the state file, and starts, extends, signals and
// stops the command.
package electd

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/election"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Config is what a member needs beyond its cli.Member.
type Config struct {
	// Election configures the machine. Its ID and Peers are the member's
	// (Run sets them); a nil Rand is seeded from the member's ID and
	// incarnation. Term is the highest term read from StateFile; a Lease
	// of 0 runs the command without a majority's acknowledgement.
	Election election.Config
	// Child is the command run while this member leads (nil: none).
	Child []string
	// StateFile keeps the highest term and the last ELECT_FENCE ("" none).
	StateFile string
	// Fence is the last ELECT_FENCE read from StateFile.
	Fence uint64
	// KillGrace: after leadership is lost, SIGTERM the command, then
	// SIGKILL after this long (or at the lease's end, if that is sooner).
	KillGrace time.Duration
	// Rerun: stay in the election after losing leadership, and run the
	// command again on every new lease or term.
	Rerun bool
}

// Run runs one member until a signal (nil, or 128+signal with a command),
// the command's exit (its code), a lost leadership while the command ran
// (76, unless Rerun) or a failed transport (69).
func Run(mb *cli.Member, cfg Config) error {
	ec := cfg.Election
	mb.Identify(&ec.ID, &ec.Peers, &ec.Rand)
	m, err := cli.Build(election.New(ec))
	if err != nil {
		return err
	}
	// Under systemd, READY=1 once this member knows a leader (itself or
	// another), not merely once it listens: a unit ordered After= an
	// elect unit starts when the group has one.
	mb.NotifyReadyOn = "leader"
	if len(cfg.Child) > 0 && ec.Lease > 0 {
		// The command's watchdog is started now, not when this member
		// first leads: on a busy host its start-up takes longer than a
		// lease, and the command waits for it (cli.StartLeased).
		cli.WarmWatch()
	}
	drv, live, err := cli.StartMachine[election.Msg](mb, m, election.Codec{},
		"algo", ec.Algo, "heartbeat", ec.Heartbeat, "timeout", ec.Timeout, "lease", ec.Lease, "term", ec.Term)
	if err != nil {
		return err
	}
	defer live.Stop()
	s := newService(cfg, mb.ID, mb.Out, mb.Log)
	// retire resigns leadership (so the others need not wait for a
	// timeout) and stops the member.
	s.retire = func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = drv.Request(ctx, election.Msg{Type: election.MsgRetire})
		cancel()
		live.Stop()
	}
	return s.loop(live)
}

// child is a running command: *cli.Child, or a test's fake.
type child interface {
	Pid() int
	Done() <-chan struct{}
	ExitCode() int
	Signal(syscall.Signal)
	Extend(until time.Time)
	Deadline() time.Time
	Stop(grace time.Duration)
}

// starter starts the command with env; with a lease (leased), a watchdog
// kills it at until unless extended.
type starter func(args, env []string, leased bool, until time.Time, grace time.Duration) (child, error)

// startChild starts a real process.
func startChild(args, env []string, leased bool, until time.Time, grace time.Duration) (child, error) {
	var (
		kid *cli.Child
		err error
	)
	if leased {
		kid, err = cli.StartLeased(args, env, until)
	} else {
		kid, err = cli.StartChild(args, env)
	}
	if err != nil {
		return nil, err
	}
	kid.SetKillGrace(grace)
	return kid, nil
}

// service is the run loop's state: what leads, the command, the term and
// fence to persist. Its clock, its way of starting a command and its way
// of retiring are fields, so that tests drive it without processes.
type service struct {
	cfg    Config
	self   node.ID
	out    *cli.Output
	log    *slog.Logger
	now    func() time.Time
	start  starter
	retire func()

	leased   bool
	kid      child
	kidDone  <-chan struct{}
	leading  bool      // leads (and, with a lease, holds it)
	until    time.Time // the lease's end
	lastTerm uint64    // the highest term seen, persisted
	fence    uint64    // the last ELECT_FENCE given, persisted
}

func newService(cfg Config, self node.ID, out *cli.Output, log *slog.Logger) *service {
	return &service{cfg: cfg, self: self, out: out, log: log, now: time.Now, start: startChild, retire: func() {},
		leased: cfg.Election.Lease > 0, lastTerm: cfg.Election.Term, fence: cfg.Fence}
}

// persist writes the highest term and the last fence to the state file.
func (s *service) persist() {
	if err := cli.WriteUints(s.cfg.StateFile, s.lastTerm, s.fence); err != nil {
		s.log.Error("cannot persist the term and fence", "err", err)
	}
}

// run starts the command for leader's term, with a new fence persisted
// before the command can see it.
func (s *service) run(leader node.ID, term uint64) error {
	// ELECT_FENCE: the term in the high 32 bits, a count of the commands
	// run in that term below, and never the same twice: a lease lost and
	// taken again in one term runs a second command under the same
	// ELECT_TERM, but never under the same fence.
	s.fence = max(s.fence+1, term<<32+1)
	s.persist()
	env := []string{"ELECT_LEADER=" + leader.String(), "ELECT_TERM=" + strconv.FormatUint(term, 10),
		"ELECT_ID=" + s.self.String(), "ELECT_FENCE=" + strconv.FormatUint(s.fence, 10)}
	kid, err := s.start(s.cfg.Child, env, s.leased, s.until, s.cfg.KillGrace)
	if err != nil {
		return err
	}
	s.kid, s.kidDone = kid, kid.Done()
	s.log.Info("child started", "pid", kid.Pid(), "term", term, "fence", s.fence)
	return nil
}

// loop answers the member's events, the command's exit and signals until
// one of them ends the run.
func (s *service) loop(live *cli.Running) error {
	for {
		select {
		case err := <-live.Done:
			return cli.Failed(err)
		case ev := <-live.Events:
			if done, err := s.event(ev); done {
				return err
			}
		case <-s.kidDone:
			if done, err := s.exited(); done {
				return err
			}
		case sig := <-live.Hangups:
			// The key file was re-read; the command may have its own to re-read.
			if s.kid != nil {
				s.kid.Signal(sig.(syscall.Signal))
			}
		case sig := <-live.Signals:
			if done, err := s.signal(sig); done {
				return err
			}
		}
	}
}

// event handles one of the machine's events; done says the run is over.
func (s *service) event(ev node.Event) (done bool, err error) {
	switch ev := ev.(type) {
	case election.LeaderEvent:
		// Persist before printing: a member killed between the two must
		// not announce the same term again after a restart.
		if ev.Term > s.lastTerm {
			s.lastTerm = ev.Term
			s.persist()
		}
		s.out.Event(ev)
		if ev.Self {
			s.log.Info("leading", "term", ev.Term)
		}
		if !s.leased {
			s.leading = ev.Self
			if ev.Self && len(s.cfg.Child) > 0 && s.kid == nil {
				if err := s.run(ev.Leader, ev.Term); err != nil {
					s.retire()
					return true, err
				}
			}
		}
	case election.LeaseEvent:
		if !ev.Renewed {
			s.out.Event(ev)
		}
		s.leading, s.until = ev.Held, ev.Until
		if ev.Held && s.kid != nil {
			s.kid.Extend(ev.Until)
		}
		if ev.Held && len(s.cfg.Child) > 0 && s.kid == nil {
			if err := s.run(s.self, ev.Term); errors.Is(err, cli.ErrLeaseOver) {
				s.log.Warn("the lease ended before the command could start", "term", ev.Term)
				s.leading = false
			} else if err != nil {
				s.retire()
				return true, err
			}
		}
	case election.StepDownEvent:
		s.log.Warn("stepped down", "term", ev.Term, "reason", ev.Reason)
		s.leading = false
	}
	if !s.leading && s.kid != nil {
		g := s.cfg.KillGrace
		if s.leased {
			// The watchdog kills at the lease's end in any case.
			g = min(g, max(s.until.Sub(s.now()), 0))
		}
		s.log.Warn("leadership lost: stopping child", "pid", s.kid.Pid(), "grace", g)
		s.kid.Stop(g)
		s.kid, s.kidDone = nil, nil
		if !s.cfg.Rerun {
			s.retire()
			return true, cli.Exitf(cli.ExitLost, "leadership lost while the command ran")
		}
	}
	return false, nil
}

// exited handles the command's end.
func (s *service) exited() (done bool, err error) {
	if s.leased && !s.now().Before(s.kid.Deadline()) {
		// The watchdog killed the command at its deadline (the lease's
		// end less the kill slack, cli.KillSlack) while this process
		// could not act (stopped, starved).
		s.log.Warn("the lease ran out: the watchdog stopped the child", "pid", s.kid.Pid(), "code", s.kid.ExitCode())
		s.kid, s.kidDone, s.leading = nil, nil, false
		if !s.cfg.Rerun {
			s.retire()
			return true, cli.Exitf(cli.ExitLost, "lease lost while the command ran")
		}
		return false, nil
	}
	code := s.kid.ExitCode()
	s.log.Info("child exited; resigning", "code", code)
	s.retire()
	return true, &cli.ExitError{Code: code}
}

// signal handles SIGINT or SIGTERM: passed on to a running command, which
// decides; without one, the member resigns.
func (s *service) signal(sig os.Signal) (done bool, err error) {
	if s.kid != nil {
		s.log.Info("forwarding signal to child", "signal", sig)
		s.kid.Signal(sig.(syscall.Signal))
		return false, nil
	}
	s.log.Info("signal: resigning", "signal", sig)
	s.retire()
	if len(s.cfg.Child) > 0 {
		return true, &cli.ExitError{Code: cli.SignalCode(sig)}
	}
	return true, nil
}
