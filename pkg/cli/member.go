package cli

import (
	"context"
	"fmt"
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

// Signals are the signals every tool handles alike: a member stops (a
// leader resigns first), a wrapper passes them on to its child.
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
// Signals.
type Running struct {
	Events  <-chan node.Event
	Done    <-chan error // the driver ended by itself: the transport failed
	Signals <-chan os.Signal
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
	if m.Key == nil {
		// On stderr whatever --log-level says: running unauthenticated
		// must never go unnoticed.
		fmt.Fprintf(os.Stderr, "%s: warning: no --key-file: frames are NOT authenticated; anyone who can reach %s can take part\n", m.Tool, m.Net.Addr())
	}
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan node.Event, 1024)
	done := make(chan error, 1)
	sigs, stopSig := NotifySignals()
	r := &Running{Events: events, Done: done, Signals: sigs, cancel: cancel, done: done, stopSig: stopSig}
	if p, ok := drv.(interface {
		Probe(context.Context) (driver.StatusReply, error)
	}); ok {
		m.Metrics.SetProbe(p.Probe)
	}
	go func() {
		done <- drv.Run(ctx, func(ev node.Event) {
			m.Metrics.Event(ev)
			events <- ev
		})
	}()
	if !m.DelayReady {
		if err := m.WriteReady(); err != nil {
			r.Stop()
			return nil, err
		}
	}
	m.Log.Info("started", append([]any{"id", m.ID, "addr", m.Net.Addr(), "members", len(m.Peers)}, attrs...)...)
	return r, nil
}

// WriteReady writes --ready-file (Start does, unless DelayReady).
func (m *Member) WriteReady() error {
	if err := WriteReadyFile(m.readyFile, m.Net.Addr()); err != nil {
		return Exitf(ExitUsage, "--ready-file: %v", err)
	}
	return nil
}

// Stop stops the driver and waits for it; it may be called more than once.
func (r *Running) Stop() {
	if r.stopped {
		return
	}
	r.stopped = true
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
	f, err := wire.NewFramer(ClusterKey(cm.Cluster, cm.Peers), id, uint64(time.Now().UnixNano()), cm.Key)
	if err != nil {
		return nil, Exitf(ExitUsage, "%v", err)
	}
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
