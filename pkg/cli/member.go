package cli

import (
	"context"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Signals are the signals every tool handles alike: a wrapper passes them
// on to its child; a member stops on SIGINT and SIGTERM (a leader resigns
// first) and re-reads its key file on SIGHUP (Member.Start).
var Signals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// NotifySignals catches Signals until stop is called.
func NotifySignals() (sigs <-chan os.Signal, stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, Signals...)
	return ch, func() { signal.Stop(ch) }
}

// SignalCode is the exit code of a process ended by s: 128+n.
func SignalCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 128
}

// Runner is a protocol driver (driver.Driver[M] for any M).
type Runner interface {
	Run(ctx context.Context, emit func(node.Event)) error
}

// Running is a started member: its driver runs in the background until
// Stop, its events arrive on Events, and the signals it must answer on
// Signals. SIGHUP does not stop a member: it re-reads --key-file
// (ReloadKeys) and is then passed on Hangups, for a member that runs a
// child to forward.
type Running struct {
	Events  <-chan node.Event
	Done    <-chan error     // the driver ended by itself: the transport failed
	Signals <-chan os.Signal // SIGINT, SIGTERM
	Hangups <-chan os.Signal // SIGHUP, once the key file was re-read
	cancel  context.CancelFunc
	done    chan error
	stopSig func()
	stopped bool
}

// Start runs drv over the member's transport, catches Signals, writes
// --ready-file and logs "started" with attrs: the start-up every member of
// every tool shares. Stop undoes it.
//
// Without a key it warns, after every argument check has passed, that
// frames are not authenticated.
func (m *Member) Start(drv Runner, attrs ...any) (*Running, error) {
	if m.Key == nil && !m.quietNoKey {
		// On stderr whatever --log-level says: running unauthenticated
		// must never go unnoticed (unless asked for, all on loopback).
		m.warnNoKey()
	}
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan node.Event, 1024)
	done := make(chan error, 1)
	sigs, stopSig := NotifySignals()
	stops, hups := make(chan os.Signal, 4), make(chan os.Signal, 4)
	r := &Running{Events: events, Done: done, Signals: stops, Hangups: hups, cancel: cancel, done: done, stopSig: stopSig}
	go func() {
		for {
			var s os.Signal
			select {
			case s = <-sigs:
			case <-ctx.Done():
				return
			}
			out := stops
			if s == syscall.SIGHUP {
				m.ReloadKeys()
				out = hups
			}
			select {
			case out <- s:
			default: // as signal.Notify does when nobody keeps up
			}
		}
	}()
	if p, ok := drv.(interface {
		Probe(context.Context) (driver.StatusReply, error)
	}); ok {
		m.Metrics.SetProbe(p.Probe)
	}
	emit := m.notifyEvents(ctx, drv, func(ev node.Event) {
		m.Metrics.Event(ev)
		events <- ev
	})
	go func() { done <- drv.Run(ctx, emit) }()
	if m.Names != nil {
		go m.follow(ctx, m.resolveEvery)
	}
	if !m.DelayReady {
		if err := m.WriteReady(); err != nil {
			r.Stop()
			return nil, err
		}
	}
	m.Log.Info("started", append([]any{"id", m.ID, "addr", m.Net.Addr(), "members", len(m.Peers)}, attrs...)...)
	return r, nil
}

// Rand is the seed a member's machine draws from: its incarnation and ID,
// so that two members, or two runs of one, do not draw alike.
func (m *Member) Rand() *rand.Rand { return rand.New(rand.NewPCG(m.Incarnation, uint64(m.ID))) }

// Identify fills a protocol Config's identity from the member: its ID,
// its peers' IDs and, when *r is nil, a Rand seeded from the member's
// incarnation and ID (so two members never draw alike).
func (m *Member) Identify(id *node.ID, peers *[]node.ID, r **rand.Rand) {
	*id, *peers = m.ID, IDs(m.Peers)
	if *r == nil {
		*r = m.Rand()
	}
}

// Build passes on what a protocol constructor returns, its error as exit
// 64 (a Config the flags could not make valid): cli.Build(consensus.New(cfg)).
func Build[T any](v T, err error) (T, error) {
	if err != nil {
		return v, Exitf(ExitUsage, "%v", err)
	}
	return v, nil
}

// StartMachine puts the protocol machine m on the member's network (its
// transport and framer, logging to its log) and starts it with Start: the
// one way every tool runs a machine on real sockets. It returns the driver,
// for requests and status, and the running member.
func StartMachine[M any](m *Member, machine node.Machine[M], codec wire.Codec[M], attrs ...any) (*driver.Driver[M], *Running, error) {
	return StartMachineWith(m, machine, codec, driver.Config{}, attrs...)
}

// StartMachineWith is StartMachine with more of the driver's Config (a
// Control handler, a Seen table); its Framer and Log default to the
// member's.
func StartMachineWith[M any](m *Member, machine node.Machine[M], codec wire.Codec[M], cfg driver.Config, attrs ...any) (*driver.Driver[M], *Running, error) {
	if cfg.Framer == nil {
		cfg.Framer = m.Framer
	}
	if cfg.Log == nil {
		cfg.Log = m.Log
	}
	drv := driver.New[M](machine, codec, m.Net, cfg)
	run, err := m.Start(drv, attrs...)
	if err != nil {
		return nil, nil, err
	}
	return drv, run, nil
}

// WriteReady writes --ready-file (Start does, unless DelayReady).
func (m *Member) WriteReady() error {
	if err := WriteReadyFile(m.readyFile, m.Net.Addr()); err != nil {
		return Exitf(ExitUsage, "--ready-file: %v", err)
	}
	if m.NotifyReadyOn == "" && m.NotifyReadyWhen == nil {
		SystemdNotifier().Ready(m.serving())
	}
	return nil
}

// Stop stops the driver and waits for it; it may be called more than once.
func (r *Running) Stop() {
	if r.stopped {
		return
	}
	r.stopped = true
	SystemdNotifier().Stopping()
	r.stopSig()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
	}
}

// Failed is the error for a driver that ended by itself.
func Failed(err error) error { return Exitf(ExitUnavailable, "transport failed: %v", err) }

// Query asks the members ids for their status over a throw-away client
// transport (this cluster's name, key and transport kind) and returns the
// answers that came within wait.
func (cm *Common) Query(ctx context.Context, ids []node.ID, wait time.Duration) (map[node.ID]driver.StatusReply, error) {
	if len(ids) == 0 {
		return map[node.ID]driver.StatusReply{}, nil
	}
	// A client ID outside any sane member range, random so that two
	// concurrent queries do not look like replays of each other.
	id := wire.ClientIDBase | node.ID(rand.Uint32N(0x0FFFFFFF))
	f := wire.NewFramerRing(ClusterKey(cm.Cluster, cm.Peers), id, uint64(time.Now().UnixNano()), cm.Key)
	f.Only(ids)
	sub := map[node.ID]string{}
	for _, m := range ids {
		sub[m] = cm.Peers[m]
	}
	tr, err := OpenClientTransport(cm.Transport, sub)
	if err != nil {
		return nil, Exitf(ExitUnavailable, "%v", err)
	}
	replies, err := driver.Query(ctx, f, tr, ids, wait)
	if err != nil {
		return nil, Exitf(ExitUnavailable, "%v", err)
	}
	return replies, nil
}

// QueryAll is Query for a status command: every member of --peers, within
// the command's --wait.
func (cm *Common) QueryAll(c *ucli.Context) (map[node.ID]driver.StatusReply, error) {
	return cm.Query(context.Background(), IDs(cm.Peers), c.Duration("wait"))
}

// QueryStatus is a status command's start: the client flags (Setup), then
// every member's answer within --wait (QueryAll).
func QueryStatus(c *ucli.Context, tool string) (*Common, map[node.ID]driver.StatusReply, error) {
	cm, err := Setup(c, tool)
	if err != nil {
		return nil, nil, err
	}
	replies, err := cm.QueryAll(c)
	return cm, replies, err
}
