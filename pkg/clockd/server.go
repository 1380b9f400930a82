// Package clockd is clocksync's service around the pure pkg/clocksync:
// the NTP server on a real socket with the kernel's receive timestamps,
// the clock it serves (virtual and deliberately wrong, or the system clock
// slewed through adjtimex), its control socket, and the query client.
package clockd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/clock"
	"github.com/roundtable-go/roundtable/pkg/clocksync"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/metrics"
)

// node is a server's clock: a (possibly deliberately wrong) local clock
// disciplined towards its upstream, and what it says about itself.
type server struct {
	mu       sync.Mutex
	clk      localClock
	srv      clocksync.Server
	upstream string
	fatal    error // why following the upstream had to stop the server
	declared uint8 // --stratum, 0 none
	fromPeer bool  // synchronised from the symmetric peer

	// For --metrics (under mu): the last upstream sample and when the
	// follow loop last turned; requests answered and dropped (atomic).
	offset, delay     time.Duration
	polled            time.Time
	answered, dropped atomic.Uint64
}

// probe is the server's metrics.Probe: its status, read under the lock
// both of its loops take, and an error when the follow loop has not
// turned for three polls (plus the bound a probe is given).
func (n *server) probe(poll time.Duration) metrics.Probe {
	return func(ctx context.Context) (driver.StatusReply, error) {
		got := make(chan driver.StatusReply, 1)
		var polled time.Time
		go func() {
			n.mu.Lock()
			st := map[string]any{"synced": n.srv.Synced, "stratum": n.srv.Stratum,
				"offset_ns": n.offset.Nanoseconds(), "delay_ns": n.delay.Nanoseconds()}
			polled = n.polled
			n.mu.Unlock()
			b, _ := json.Marshal(st)
			got <- driver.StatusReply{Status: b, Counters: map[string]uint64{
				"accepted": n.answered.Load() + n.dropped.Load(), "sent": n.answered.Load(), "dropped_malformed": n.dropped.Load()}}
		}()
		select {
		case rep := <-got:
			if n.upstream != "" && time.Since(polled) > 3*poll+metrics.ProbeBound {
				return rep, fmt.Errorf("clockd: the upstream poll loop has not turned since %v", polled)
			}
			return rep, nil
		case <-ctx.Done():
			return driver.StatusReply{}, ctx.Err()
		}
	}
}

func (n *server) now() time.Time { return n.at(time.Now()) }

// at maps a system clock reading to this node's disciplined time.
func (n *server) at(sys time.Time) time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.clk.At(sys)
}

// ServeConfig is what `clocksync serve` is told by its flags.
type ServeConfig struct {
	Bind      string        // address to answer on, resolved
	Upstream  string        // HOST:PORT to discipline this server's clock from; "" none
	Peer      string        // HOST:PORT of a symmetric peer, followed only while its stratum is lower; "" none
	Poll      time.Duration // how often to query the upstream
	Stratum   int           // declare the clock synchronised at this stratum (1-15); 0 not
	Skew      time.Duration // start the virtual clock off by this much
	DriftPPM  float64       // make the virtual clock run fast (+) or slow (-)
	MaxSlew   float64       // fastest correction, in ppm
	MakeStep  time.Duration // when behind by more than this, step forward at once
	Apply     bool          // discipline the system clock (adjtimex) instead of a virtual one
	Socket    string        // control socket for 'clocksync now --socket'; "" none
	ReadyFile string        // written with the address once up; "" none
	Log       *slog.Logger
	Metrics   *metrics.Server // --metrics; nil none
}

// Serve answers NTPv4 requests until a signal (nil), or until following
// the upstream had to stop the server (77: the clock cannot be changed).
func Serve(cfg ServeConfig) error {
	log, bind, upstream := cfg.Log, cfg.Bind, cfg.Upstream
	n := &server{srv: clocksync.Server{Precision: -20}, upstream: upstream, polled: time.Now()}
	defer cfg.Metrics.Close()
	if cfg.Apply {
		if cfg.Skew != 0 || cfg.DriftPPM != 0 || upstream == "" {
			return cli.Exitf(cli.ExitUsage, "--apply disciplines the system clock from --upstream; it cannot be combined with --skew or --drift-ppm")
		}
		kc, err := newKernelClock(cfg.MakeStep)
		if err != nil {
			return cli.Exitf(cli.ExitNoPerm, "%v", err)
		}
		n.clk = kc
		log.Warn("--apply: this server will slew the system clock", "upstream", upstream)
	} else {
		n.clk = &virtualClock{raw: clock.Skewed{Base: clock.System{}, Offset: cfg.Skew, DriftPPM: cfg.DriftPPM, Epoch: time.Now()},
			d: clocksync.Discipline{MaxSlewPPM: cfg.MaxSlew, MakeStep: cfg.MakeStep}}
	}
	if st := cfg.Stratum; st != 0 {
		if st < 1 || st > 15 || upstream != "" {
			return cli.Exitf(cli.ExitUsage, "--stratum must be 1 to 15, and not combined with --upstream")
		}
		n.srv.Synced, n.srv.Stratum, n.srv.RefID = true, uint8(st), [4]byte{'L', 'O', 'C', 'L'}
		n.declared = uint8(st)
	}
	if cfg.Peer != "" && (upstream != "" || cfg.Apply) {
		return cli.Exitf(cli.ExitUsage, "--peer cannot be combined with --upstream or --apply")
	}
	if d := cfg.DriftPPM; d < -100000 || d > 100000 {
		return cli.Exitf(cli.ExitUsage, "--drift-ppm must be within ±100000")
	}
	addr, err := net.ResolveUDPAddr("udp", bind)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--bind: %v", err)
	}
	conn, err := net.ListenUDP("udp", addr)
	if err != nil {
		return cli.Exitf(cli.ExitUnavailable, "%v", err)
	}
	defer conn.Close()
	if path := cfg.Socket; path != "" {
		ln, err := cli.ListenControl("clocksync", path)
		if err != nil {
			return err
		}
		defer ln.Close()
		go n.control(ln)
	}
	if err := cli.WriteReadyFile(cfg.ReadyFile, conn.LocalAddr().String()); err != nil {
		return cli.Exitf(cli.ExitUsage, "--ready-file: %v", err)
	}
	cfg.Metrics.SetProbe(n.probe(max(cfg.Poll, 10*time.Millisecond)))
	log.Info("serving NTP", "addr", conn.LocalAddr(), "synced", n.srv.Synced, "stratum", n.srv.Stratum, "upstream", upstream)
	sd := cli.SystemdNotifier()
	sd.Ready(n.state(conn.LocalAddr().String()))
	sigs, stopSigs := cli.NotifySignals()
	defer stopSigs()
	done := make(chan struct{})
	go func() { <-sigs; sd.Stopping(); close(done); conn.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The watchdog's proof of life is an NTP exchange with this server:
	// the loop below must answer it.
	sd.Watch(ctx, func(ctx context.Context) error { return n.ping(ctx, conn.LocalAddr().String()) })
	if upstream != "" || cfg.Peer != "" {
		go func() {
			target, peer := upstream, false
			if cfg.Peer != "" {
				target, peer = cfg.Peer, true
			}
			if err := n.follow(target, peer, cfg.Poll, done, log); err != nil {
				n.mu.Lock()
				n.fatal = err
				n.mu.Unlock()
				conn.Close()
			}
		}()
	}
	// The kernel stamps each datagram on arrival (SO_TIMESTAMPNS): T2 is
	// then the arrival time, not when this goroutine got to run.
	stamped := enableRxTimestamps(conn) == nil
	buf := make([]byte, 1024)
	oob := make([]byte, 128)
	var dropped uint64
	for {
		k, oobn, _, from, err := conn.ReadMsgUDP(buf, oob)
		arrival := time.Now()
		if stamped {
			if t, ok := rxTimestamp(oob[:oobn]); ok {
				arrival = t
			}
		}
		recv := n.at(arrival)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				log.Info("stopped", "dropped", dropped)
				n.mu.Lock()
				defer n.mu.Unlock()
				if n.fatal != nil {
					return cli.Exitf(cli.ExitNoPerm, "%v", n.fatal)
				}
				return nil
			}
			continue
		}
		req, err := clocksync.Unmarshal(buf[:k])
		if err != nil {
			dropped++
			n.dropped.Add(1)
			log.Debug("malformed request dropped", "from", from, "err", err)
			continue
		}
		log.Debug("request", "from", from, "mode", req.Mode, "version", req.Version)
		n.mu.Lock()
		srv := n.srv
		n.mu.Unlock()
		if srv.RefTime.IsZero() {
			srv.RefTime = recv.Truncate(time.Second)
		}
		rep, ok := srv.Reply(req, recv, recv)
		if !ok {
			dropped++
			n.dropped.Add(1)
			continue
		}
		n.answered.Add(1)
		// T3 as late as possible: stamp again right before sending.
		rep.Transmit, rep.TransmitRaw = n.now(), 0
		_, _ = conn.WriteToUDP(rep.Marshal(), from)
	}
}

// restoreDeclared returns to --stratum, if declared, else to
// unsynchronised (under mu).
func (n *server) restoreDeclared() {
	if n.declared != 0 {
		n.srv.Synced, n.srv.Stratum, n.srv.RefID = true, n.declared, [4]byte{'L', 'O', 'C', 'L'}
		return
	}
	n.srv.Synced = false
}

// state is the status line for systemd.
func (n *server) state(addr string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.srv.Synced {
		return fmt.Sprintf("serving NTP on %s, unsynchronised", addr)
	}
	return fmt.Sprintf("serving NTP on %s at stratum %d", addr, n.srv.Stratum)
}

// ping asks the server on addr for the time once: it answers only while
// its loop is turning.
func (n *server) ping(ctx context.Context, addr string) error {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	wait := time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	if _, _, ok := exchange(conn, time.Now, wait); !ok {
		return errors.New("no answer")
	}
	return nil
}

// follow polls the upstream and disciplines the node's clock; after eight
// polls without a usable answer the node declares itself unsynchronised.
//
// A symmetric peer (peer) is followed only while its stratum is lower than
// this server's (16 when unsynchronised): Tanenbaum ch. 6, "when A contacts
// B, it will only adjust its time if its own stratum level is higher than
// that of B ... if A's stratum level was lower than that of B, B will
// adjust itself to A". Two servers that peer with each other thus settle
// with the lower-stratum one unchanged and the other one stratum below it.
// A peer of a stratum not lower is no miss; losing a followed peer goes
// back to --stratum, if declared, else to unsynchronised.
func (n *server) follow(upstream string, peer bool, poll time.Duration, done <-chan struct{}, log interface {
	Info(string, ...any)
	Warn(string, ...any)
}) error {
	if poll < 10*time.Millisecond {
		poll = 10 * time.Millisecond
	}
	conn, err := net.Dial("udp", upstream)
	if err != nil {
		log.Warn("upstream unreachable", "upstream", upstream, "err", err)
		return nil
	}
	defer conn.Close()
	misses := 0
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		rep, s, ok := exchange(conn, n.now, poll)
		n.mu.Lock()
		n.polled = time.Now()
		own := uint8(16)
		if n.srv.Synced {
			own = n.srv.Stratum
		}
		usable := ok && rep.Leap != clocksync.LeapAlarm && rep.Stratum >= 1 && rep.Stratum < 15
		if peer && ok && (!usable || rep.Stratum >= own) {
			// An answer, but not from a lower stratum: the peer adjusts
			// to us (or to nobody), not we to it.
			misses, usable = 0, false
			if n.fromPeer {
				// The peer fell to our stratum or below it: stop following.
				n.fromPeer = false
				n.restoreDeclared()
			}
		} else if usable {
			n.fromPeer = peer
		}
		if usable {
			misses = 0
			if err := n.clk.Update(time.Now(), s.Offset()); err != nil {
				n.mu.Unlock()
				return err
			}
			first := !n.srv.Synced
			n.srv.Synced, n.srv.Stratum = true, rep.Stratum+1
			if ip, _, err := net.SplitHostPort(upstream); err == nil {
				if v4 := net.ParseIP(ip).To4(); v4 != nil {
					copy(n.srv.RefID[:], v4)
				}
			}
			n.srv.RefTime = s.T4
			n.offset, n.delay = s.Offset(), s.Delay()
			n.srv.RootDelay = rep.RootDelay + s.Delay()
			// What is still being slewed away counts as dispersion, plus
			// 1000 ppm of the poll interval as a growth bound.
			n.srv.RootDisp = rep.RootDisp + absDur(s.Offset()) + poll/1000
			if first {
				log.Info("synchronised", "upstream", upstream, "stratum", n.srv.Stratum, "offset", s.Offset())
				cli.SystemdNotifier().Status(fmt.Sprintf("synchronised to %s at stratum %d", upstream, n.srv.Stratum))
			}
		} else if peer {
			if !ok {
				misses++
			}
			if misses >= 8 && n.fromPeer {
				n.fromPeer = false
				n.restoreDeclared()
				log.Warn("lost the peer", "peer", upstream, "synced", n.srv.Synced)
			}
		} else if misses++; misses >= 8 && n.srv.Synced {
			n.srv.Synced = false
			log.Warn("lost the upstream: unsynchronised", "upstream", upstream)
			cli.SystemdNotifier().Status("unsynchronised: lost " + upstream)
		}
		n.mu.Unlock()
		select {
		case <-done:
			return nil
		case <-t.C:
		}
	}
}
