package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Notifier speaks systemd's readiness protocol, sd_notify(3): datagrams of
// "KEY=VALUE" lines to the Unix socket NOTIFY_SOCKET names (a path, or an
// abstract name given with a leading '@'). A nil Notifier, the one a
// process started without NOTIFY_SOCKET has, does nothing.
//
// The protocol is one sendto per message; it is written out here rather
// than taken from github.com/coreos/go-systemd/v22/daemon so that the
// watchdog interval and the abstract-socket case stay in view beside the
// code that uses them, and no tool links another module for 30 lines.
type Notifier struct {
	mu   sync.Mutex
	conn *net.UnixConn
	// Watchdog is how often WATCHDOG=1 is due: half of WATCHDOG_USEC, as
	// sd_watchdog_enabled(3) advises; zero when systemd watches nothing
	// (or another process, WATCHDOG_PID).
	Watchdog time.Duration
}

// notifier is this process's Notifier, read once from the environment.
var notifier = sync.OnceValue(NotifierFromEnv)

// SystemdNotifier is this process's Notifier: nil unless systemd (or a
// test) set NOTIFY_SOCKET.
//
// The variables stay in the environment: a wrapped command (`lockd run
// NAME -- CMD` as a unit's ExecStart=, with NotifyAccess=all) may tell
// systemd itself when it is ready. Under NotifyAccess=main, as the units
// in contrib/systemd have it, only this process is heard, and
// WATCHDOG_PID keeps a child from taking the watchdog as its own.
func SystemdNotifier() *Notifier { return notifier() }

// NotifierFromEnv opens the socket NOTIFY_SOCKET names, or returns nil
// when it is unset or cannot be opened.
func NotifierFromEnv() *Notifier {
	path, usec, pid := os.Getenv("NOTIFY_SOCKET"), os.Getenv("WATCHDOG_USEC"), os.Getenv("WATCHDOG_PID")
	if path == "" || path[0] != '/' && path[0] != '@' {
		return nil
	}
	// Go maps a leading '@' to Linux's abstract namespace itself.
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil
	}
	n := &Notifier{conn: conn}
	if us, err := strconv.ParseInt(usec, 10, 64); err == nil && us > 0 && (pid == "" || pid == strconv.Itoa(os.Getpid())) {
		n.Watchdog = time.Duration(us) * time.Microsecond / 2
	}
	return n
}

// Send sends one message ("READY=1", or several lines). It never blocks
// for long: a service manager that stopped reading costs at most a
// second, and a lost message is not an error the tool could act on.
func (n *Notifier) Send(state string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	_ = n.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = n.conn.Write([]byte(state))
}

// Ready says the service can serve, with a status line.
func (n *Notifier) Ready(status string) {
	n.Send("READY=1\nSTATUS=" + oneLine(status) + "\nMAINPID=" + strconv.Itoa(os.Getpid()))
}

// Status sets the line `systemctl status` shows.
func (n *Notifier) Status(status string) { n.Send("STATUS=" + oneLine(status)) }

// Stopping says the service is shutting down.
func (n *Notifier) Stopping() { n.Send("STOPPING=1") }

// Watch sends WATCHDOG=1 every Watchdog interval for as long as alive
// answers within that interval, until ctx ends. alive must prove the work
// is being done (a round trip through the loop that does it), not merely
// that this goroutine runs: a wedged loop then stops the pings and
// systemd restarts the service.
func (n *Notifier) Watch(ctx context.Context, alive func(context.Context) error) {
	if n == nil || n.Watchdog <= 0 {
		return
	}
	go func() {
		t := time.NewTicker(n.Watchdog)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// Half the interval to answer: a ping is never later than
			// WATCHDOG_USEC after the one before.
			actx, cancel := context.WithTimeout(ctx, n.Watchdog/2)
			err := alive(actx)
			cancel()
			if err == nil && ctx.Err() == nil {
				n.Send("WATCHDOG=1")
			}
		}
	}()
}

// statusKinds are the events that change what `systemctl status` should
// say: who leads, which view or pool this member is in, what was decided.
var statusKinds = map[string]bool{"leader": true, "stepdown": true, "coordinator": true, "view": true,
	"transitional": true, "minority": true, "merge": true, "removed": true, "excluded": true,
	"decide": true, "undecided": true}

// notifyEvents, under systemd, pings the watchdog through drv's own loop
// and turns notable events into STATUS= lines; it returns the emit
// function for drv. Without NOTIFY_SOCKET it returns emit unchanged.
func (m *Member) notifyEvents(ctx context.Context, drv Runner, emit func(node.Event)) func(node.Event) {
	return m.notifyWith(ctx, SystemdNotifier(), drv, emit)
}

func (m *Member) notifyWith(ctx context.Context, sd *Notifier, drv Runner, emit func(node.Event)) func(node.Event) {
	if sd == nil {
		return emit
	}
	if d, ok := drv.(interface {
		Do(context.Context, func()) error
	}); ok {
		// A no-op run on the driver goroutine: it returns only when the
		// loop that handles timers and requests is turning.
		sd.Watch(ctx, func(ctx context.Context) error { return d.Do(ctx, func() {}) })
	}
	status := make(chan string, 16)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-status:
				sd.Send(s)
			}
		}
	}()
	if p, ok := drv.(prober); ok && m.NotifyReadyWhen != nil {
		go m.readyWhen(ctx, sd, p)
	}
	readied := m.NotifyReadyOn == "" // emit runs on one goroutine at a time
	return func(ev node.Event) {
		if !readied && ev.Kind() == m.NotifyReadyOn {
			readied = true
			select { // once: worth waiting for
			case status <- "READY=1\nSTATUS=" + oneLine(m.serving()+", "+ev.String()):
			case <-ctx.Done():
			}
		} else if statusKinds[ev.Kind()] {
			select { // never hold up the driver for a status line
			case status <- "STATUS=" + oneLine(fmt.Sprintf("member %d: %s", m.ID, ev)):
			default:
			}
		}
		emit(ev)
	}
}

// prober is a driver that reports its machine's status from its loop.
type prober interface {
	Probe(context.Context) (driver.StatusReply, error)
}

// readyPoll is how often readyWhen asks the machine whether it can serve:
// a few times per protocol heartbeat, one no-op turn of the loop each.
const readyPoll = 50 * time.Millisecond

// readyWhen sends READY=1 once the machine's status satisfies
// NotifyReadyWhen, then returns; it gives up when ctx ends.
func (m *Member) readyWhen(ctx context.Context, sd *Notifier, p prober) {
	t := time.NewTicker(readyPoll)
	defer t.Stop()
	for {
		rep, err := p.Probe(ctx)
		var st map[string]any
		if err == nil && json.Unmarshal(rep.Status, &st) == nil && m.NotifyReadyWhen(st) {
			sd.Ready(m.serving() + ", quorum")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// serving is the status line of a member that can serve.
func (m *Member) serving() string { return fmt.Sprintf("member %d serving on %s", m.ID, m.Net.Addr()) }

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
