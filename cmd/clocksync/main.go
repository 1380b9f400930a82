// Command clocksync serves and queries time over NTPv4 (RFC 5905). See
// pkg/clocksync.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/clock"
	"github.com/roundtable-go/roundtable/pkg/clocksync"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/node"
)

const tool = "clocksync"

func main() { cli.Main(newApp()) }

// newApp is the command line.
func newApp() *ucli.App {
	return &ucli.App{
		Name:  tool,
		Usage: "NTP-compatible time server and client",
		Commands: []*ucli.Command{
			{
				Name:  "serve",
				Usage: "answer NTPv4 client requests from this host's clock",
				Description: `Answers NTP mode-3 requests with mode-4 replies that real clients accept.
With --stratum N the server declares itself synchronised at stratum N
(reference ID LOCL); without it, it answers with leap indicator 3 (alarm) so
clients refuse it, as unsynchronised servers do. With --upstream it
disciplines its own clock from that server (slewing, never stepping back)
and serves at the upstream's stratum + 1 once it has a good sample.
--skew and --drift-ppm give the server a deliberately wrong virtual clock.
The system clock is never changed unless --apply is given: then (as root,
with --upstream) the kernel slews the system clock with adjtimex at up to
500 ppm, steps it only forward (past --makestep), and corrects its
frequency; a slew in progress ends by itself if the server dies.
With --socket PATH, 'clocksync now --socket PATH' shows the disciplined time.

Examples:
   clocksync serve --bind 127.0.0.1:12300 --stratum 1
   clocksync serve --bind 127.0.0.1:12301 --upstream 127.0.0.1:12300 --skew 250ms --drift-ppm 200
   clocksync serve --bind '{{ GetPrivateIP }}:123' --stratum 2
   sudo clocksync serve --bind 127.0.0.1:12302 --upstream ntp.example:123 --apply --socket /run/clocksync.sock`,
				Flags: cli.WithEnv(tool, append([]ucli.Flag{
					cli.BindFlag("127.0.0.1:12300", ""),
					&ucli.IntFlag{Name: "stratum", Usage: "declare this clock synchronised at this stratum (1-15)"},
					&ucli.StringFlag{Name: "upstream", Usage: "discipline this server's clock from HOST:PORT and serve at its stratum + 1"},
					&ucli.DurationFlag{Name: "poll", Value: time.Second, Usage: "with --upstream: query it this often"},
					skewFlag(), driftFlag(),
					&ucli.Float64Flag{Name: "max-slew", Value: 83333, Usage: "fastest correction, in ppm; the clock is slewed, never stepped back"},
					&ucli.DurationFlag{Name: "makestep", Value: time.Second, Usage: "when behind by more than this, step forward at once"},
					&ucli.BoolFlag{Name: "apply", Usage: "slew the real system clock (adjtimex; needs root) instead of a virtual one; off by default"},
					socketFlag(),
					cli.ReadyFileFlag(),
				}, cli.LogFlags()...)),
				Action: serve,
			},
			{
				Name:  "berkeley",
				Usage: "run one member of a Berkeley time daemon group",
				Description: `The master polls every member (itself included), corrects each reading for
half the round trip, averages those within --max-deviation of the median,
and tells each member its adjustment; members slew their (virtual) clock,
never backwards. Without --master the master is elected (bully) and
re-elected when it fails. Prints 'adjust <seconds> master <id>' per round.
The system clock is never changed: --skew and --drift-ppm make a member's
clock deliberately wrong, and 'clocksync now' shows where each one is.

Examples:
   clocksync berkeley --id 1 --peers @peers.txt --skew 200ms --drift-ppm 50
   clocksync berkeley --id 2 --peers @peers.txt --master 1 --interval 500ms`,
				Flags: cli.WithEnv(tool, append(cli.NodeFlags(),
					&ucli.StringFlag{Name: "master", DefaultText: "elected", Usage: "the fixed time daemon"},
					&ucli.DurationFlag{Name: "interval", Value: time.Second, Usage: "polling interval"},
					&ucli.DurationFlag{Name: "max-deviation", Value: 100 * time.Millisecond, Usage: "leave out readings this far from the median"},
					skewFlag(), driftFlag(),
				)),
				Action: berkeley,
			},
			{
				Name:  "now",
				Usage: "print a running node's disciplined time (--socket) or each Berkeley member's offset (--peers)",
				Description: `With --socket PATH, asks the 'clocksync serve --socket PATH' on this host
for its time: the disciplined time, how far it is from the system clock,
the frequency correction and the part of the last offset still being
slewed. With --peers, asks every Berkeley member where its clock is
relative to this host's, and prints the spread.

Examples:
   clocksync now --socket /run/clocksync.sock
   clocksync now --peers @peers.txt --json`,
				Flags: cli.WithEnv(tool, append(cli.ClientFlags(),
					socketFlag(),
					&ucli.DurationFlag{Name: "wait", Value: time.Second, Usage: "how long to wait for answers"},
					&ucli.StringFlag{Name: cli.FlagTransport, Value: "udp", Usage: "udp or tcp"},
				)),
				Action: nowCmd,
			},
			{
				Name:      "query",
				Usage:     "query an NTP server: T1-T4, offset θ and delay δ per sample, the minimum-delay pick",
				ArgsUsage: "HOST:PORT",
				Description: `Sends --samples requests and prints each exchange's offset θ and delay δ,
then the sample with the smallest delay (the 8-sample minimum-delay
filter) in chrony-like fields. Exit 69 when the server does not answer,
75 when it answers unsynchronised (leap 3).

Examples:
   clocksync query 127.0.0.1:12300
   clocksync query --samples 4 --json pool.example:123`,
				Flags: cli.WithEnv(tool, []ucli.Flag{
					&ucli.IntFlag{Name: "samples", Value: clocksync.FilterSize, Usage: "requests to send (1-64)"},
					&ucli.DurationFlag{Name: "timeout", Value: time.Second, Usage: "wait this long for each answer"},
					&ucli.DurationFlag{Name: "pause", Value: 10 * time.Millisecond, Usage: "pause between requests"},
					cli.JSONFlag(),
				}),
				Action: query,
			},
		},
	}
}

func skewFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: "skew", Usage: "start this node's virtual clock off by this much, for demonstrations"}
}

func driftFlag() ucli.Flag {
	return &ucli.Float64Flag{Name: "drift-ppm", Usage: "make this node's virtual clock run fast (+) or slow (-) by this many ppm"}
}

// socketFlag is the serve node's control socket: where serve answers and
// now asks.
func socketFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "socket", Usage: "a serve node's control socket (Unix, mode 0600), for 'clocksync now --socket PATH'"}
}

// node is a server's clock: a (possibly deliberately wrong) local clock
// disciplined towards its upstream, and what it says about itself.
type server struct {
	mu       sync.Mutex
	clk      localClock
	srv      clocksync.Server
	upstream string
	fatal    error // why following the upstream had to stop the server
}

func (n *server) now() time.Time { return n.at(time.Now()) }

// at maps a system clock reading to this node's disciplined time.
func (n *server) at(sys time.Time) time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.clk.At(sys)
}

func serve(c *ucli.Context) error {
	log, err := cli.Logger(c, tool)
	if err != nil {
		return err
	}
	bind, err := cli.ResolveBind(c.String("bind"))
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	upstream := c.String("upstream")
	n := &server{srv: clocksync.Server{Precision: -20}, upstream: upstream}
	if c.Bool("apply") {
		if c.Duration("skew") != 0 || c.Float64("drift-ppm") != 0 || upstream == "" {
			return cli.Exitf(cli.ExitUsage, "--apply disciplines the system clock from --upstream; it cannot be combined with --skew or --drift-ppm")
		}
		kc, err := newKernelClock(c.Duration("makestep"))
		if err != nil {
			return cli.Exitf(cli.ExitNoPerm, "%v", err)
		}
		n.clk = kc
		log.Warn("--apply: this server will slew the system clock", "upstream", upstream)
	} else {
		n.clk = &virtualClock{raw: clock.Skewed{Base: clock.System{}, Offset: c.Duration("skew"), DriftPPM: c.Float64("drift-ppm"), Epoch: time.Now()},
			d: clocksync.Discipline{MaxSlewPPM: c.Float64("max-slew"), MakeStep: c.Duration("makestep")}}
	}
	if st := c.Int("stratum"); st != 0 {
		if st < 1 || st > 15 || upstream != "" {
			return cli.Exitf(cli.ExitUsage, "--stratum must be 1 to 15, and not combined with --upstream")
		}
		n.srv.Synced, n.srv.Stratum, n.srv.RefID = true, uint8(st), [4]byte{'L', 'O', 'C', 'L'}
	}
	if d := c.Float64("drift-ppm"); d < -100000 || d > 100000 {
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
	if path := c.String("socket"); path != "" {
		ln, err := cli.ListenControl(tool, path)
		if err != nil {
			return err
		}
		defer ln.Close()
		go n.control(ln)
	}
	if err := cli.WriteReadyFile(c.String(cli.FlagReadyFile), conn.LocalAddr().String()); err != nil {
		return cli.Exitf(cli.ExitUsage, "--ready-file: %v", err)
	}
	log.Info("serving NTP", "addr", conn.LocalAddr(), "synced", n.srv.Synced, "stratum", n.srv.Stratum, "upstream", upstream)
	sigs, stopSigs := cli.NotifySignals()
	defer stopSigs()
	done := make(chan struct{})
	go func() { <-sigs; close(done); conn.Close() }()
	if upstream != "" {
		go func() {
			if err := n.follow(upstream, c.Duration("poll"), done, log); err != nil {
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
			continue
		}
		// T3 as late as possible: stamp again right before sending.
		rep.Transmit, rep.TransmitRaw = n.now(), 0
		_, _ = conn.WriteToUDP(rep.Marshal(), from)
	}
}

// follow polls the upstream and disciplines the node's clock; after eight
// polls without a usable answer the node declares itself unsynchronised.
func (n *server) follow(upstream string, poll time.Duration, done <-chan struct{}, log interface {
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
		if ok && rep.Leap != clocksync.LeapAlarm && rep.Stratum >= 1 && rep.Stratum < 15 {
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
			n.srv.RootDelay = rep.RootDelay + s.Delay()
			// What is still being slewed away counts as dispersion, plus
			// 1000 ppm of the poll interval as a growth bound.
			n.srv.RootDisp = rep.RootDisp + absDur(s.Offset()) + poll/1000
			if first {
				log.Info("synchronised", "upstream", upstream, "stratum", n.srv.Stratum, "offset", s.Offset())
			}
		} else if misses++; misses >= 8 && n.srv.Synced {
			n.srv.Synced = false
			log.Warn("lost the upstream: unsynchronised", "upstream", upstream)
		}
		n.mu.Unlock()
		select {
		case <-done:
			return nil
		case <-t.C:
		}
	}
}

// exchange sends one request and waits up to timeout for its answer.
func exchange(conn net.Conn, now func() time.Time, timeout time.Duration) (clocksync.Packet, clocksync.Sample, bool) {
	buf := make([]byte, 1024)
	t1 := now()
	if _, err := conn.Write(clocksync.Packet{Version: 4, Mode: clocksync.ModeClient, Transmit: t1}.Marshal()); err != nil {
		return clocksync.Packet{}, clocksync.Sample{}, false
	}
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	for {
		k, err := conn.Read(buf)
		t4 := now()
		if err != nil {
			return clocksync.Packet{}, clocksync.Sample{}, false
		}
		p, err := clocksync.Unmarshal(buf[:k])
		// Only the answer to this request: mode 4 echoing our T1.
		if err == nil && p.Mode == clocksync.ModeServer && absDur(p.Origin.Sub(t1)) < time.Microsecond {
			return p, clocksync.Sample{T1: t1, T2: p.Receive, T3: p.Transmit, T4: t4}, true
		}
	}
}

type sampleOut struct {
	Event  string  `json:"event"`
	N      int     `json:"n"`
	T1     string  `json:"t1"`
	T2     string  `json:"t2"`
	T3     string  `json:"t3"`
	T4     string  `json:"t4"`
	Offset float64 `json:"offset_s"`
	Delay  float64 `json:"delay_s"`
}

func query(c *ucli.Context) error {
	if c.NArg() != 1 {
		return cli.Exitf(cli.ExitUsage, "query takes one HOST:PORT")
	}
	target := c.Args().First()
	if _, _, err := net.SplitHostPort(target); err != nil {
		target = net.JoinHostPort(target, "123")
	}
	samples := c.Int("samples")
	if samples < 1 || samples > 64 {
		return cli.Exitf(cli.ExitUsage, "--samples must be 1 to 64")
	}
	conn, err := net.Dial("udp", target)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	defer conn.Close()
	out := cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON))
	var f clocksync.Filter
	var last clocksync.Packet
	for i := 1; i <= samples; i++ {
		if i > 1 {
			time.Sleep(c.Duration("pause")) // pacing between requests, not synchronisation
		}
		rep, s, ok := exchange(conn, time.Now, c.Duration("timeout"))
		if !ok {
			continue
		}
		last = rep
		f.Add(s)
		so := sampleOut{Event: "sample", N: i, T1: s.T1.Format(time.RFC3339Nano), T2: s.T2.Format(time.RFC3339Nano),
			T3: s.T3.Format(time.RFC3339Nano), T4: s.T4.Format(time.RFC3339Nano),
			Offset: s.Offset().Seconds(), Delay: s.Delay().Seconds()}
		if c.Bool(cli.FlagJSON) {
			out.JSON(so)
		} else {
			out.Line(fmt.Sprintf("sample %d offset %+.6fs delay %.6fs", i, so.Offset, so.Delay))
		}
	}
	best, ok := f.Best()
	if !ok {
		return cli.Exitf(cli.ExitUnavailable, "no answer from %s", target)
	}
	// Root distance as chrony reports it: root delay/2 + root dispersion
	// + this path's delay/2.
	dist := last.RootDelay/2 + last.RootDisp + best.Delay()/2
	res := map[string]any{"event": "result", "server": target, "offset_s": best.Offset().Seconds(),
		"delay_s": best.Delay().Seconds(), "stratum": last.Stratum, "leap": last.Leap,
		"root_distance_s": dist.Seconds(), "refid": refid(last), "samples": samples}
	if c.Bool(cli.FlagJSON) {
		out.JSON(res)
	} else {
		out.Line(fmt.Sprintf("server %s stratum %d refid %s leap %d offset %+.6fs delay %.6fs root-distance %.6fs",
			target, last.Stratum, refid(last), last.Leap, best.Offset().Seconds(), best.Delay().Seconds(), dist.Seconds()))
	}
	if last.Leap == clocksync.LeapAlarm {
		return cli.Exitf(cli.ExitBusy, "%s is not synchronised (leap indicator 3)", target)
	}
	return nil
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func refid(p clocksync.Packet) string {
	if p.Stratum <= 1 || p.Stratum >= 16 {
		b := p.RefID[:]
		for i, ch := range b {
			if ch == 0 {
				b = b[:i]
				break
			}
		}
		return string(b)
	}
	return net.IP(p.RefID[:]).String()
}

func enableRxTimestamps(conn *net.UDPConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return err
	}
	return serr
}

// rxTimestamp extracts the kernel's SCM_TIMESTAMPNS from a datagram's
// control messages.
func rxTimestamp(oob []byte) (time.Time, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return time.Unix(sec, nsec), true
		}
	}
	return time.Time{}, false
}

func berkeley(c *ucli.Context) error {
	var master node.ID
	if m := c.String("master"); m != "" {
		var err error
		if master, err = node.ParseID(m); err != nil {
			return cli.Exitf(cli.ExitUsage, "--master: %v", err)
		}
	}
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	b, err := clocksync.NewBerkeley(clocksync.BerkeleyConfig{ID: mb.ID, Peers: cli.IDs(mb.Peers), Master: master,
		Interval: c.Duration("interval"), MaxDeviation: c.Duration("max-deviation"),
		Skew: c.Duration("skew"), DriftPPM: c.Float64("drift-ppm"), Epoch: time.Now(),
		Rand: rand.New(rand.NewPCG(mb.Incarnation, uint64(mb.ID)))})
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	drv := driver.New[clocksync.BerkeleyMsg](b, clocksync.BerkeleyCodec{}, mb.Net, driver.Config{Framer: mb.Framer, Log: mb.Log})
	live, err := mb.Start(drv, "master", master)
	if err != nil {
		return err
	}
	defer live.Stop()
	for {
		select {
		case ev := <-live.Events:
			mb.Out.Event(ev)
		case err := <-live.Done:
			return cli.Failed(err)
		case s := <-live.Signals:
			mb.Log.Info("signal: stopping", "signal", s)
			return nil
		}
	}
}

func nowCmd(c *ucli.Context) error {
	if path := c.String("socket"); path != "" {
		return nowSocket(c, path)
	}
	if c.String(cli.FlagPeers) == "" {
		return cli.Exitf(cli.ExitUsage, "now needs --socket PATH (a serve node on this host) or --peers (Berkeley members)")
	}
	cm, err := cli.Setup(c, tool)
	if err != nil {
		return err
	}
	replies, err := cm.QueryAll(c)
	if err != nil {
		return err
	}
	if len(replies) == 0 {
		return cli.Exitf(cli.ExitUnavailable, "no member answered within %v", c.Duration("wait"))
	}
	var lo, hi time.Duration
	first := true
	for _, id := range cli.IDs(cm.Peers) {
		r, ok := replies[id]
		if !ok {
			cm.Out.Line(fmt.Sprintf("member %d silent", id))
			continue
		}
		var st struct {
			Master uint32 `json:"master"`
			Offset int64  `json:"offset_ns"`
		}
		_ = json.Unmarshal(r.Status, &st)
		off := time.Duration(st.Offset)
		if first || off < lo {
			lo = off
		}
		if first || off > hi {
			hi = off
		}
		first = false
		if c.Bool(cli.FlagJSON) {
			cm.Out.JSON(map[string]any{"event": "member", "id": id, "master": st.Master, "offset_s": off.Seconds()})
		} else {
			cm.Out.Line(fmt.Sprintf("member %d master %d offset %+.6fs", id, st.Master, off.Seconds()))
		}
	}
	if c.Bool(cli.FlagJSON) {
		cm.Out.JSON(map[string]any{"event": "spread", "spread_s": (hi - lo).Seconds()})
	} else {
		cm.Out.Line(fmt.Sprintf("spread %.6fs", (hi - lo).Seconds()))
	}
	return nil
}

// nowSocket prints a serve node's report.
func nowSocket(c *ucli.Context, path string) error {
	conn, err := cli.DialControl(tool, path)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(c.Duration("wait")))
	var r nowReport
	if err := conn.Next(&r); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "%s: %v", path, err)
	}
	out := cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON))
	if c.Bool(cli.FlagJSON) {
		out.JSON(r)
	} else {
		state := "synced"
		if !r.Synced {
			state = "unsynced"
		}
		clk := "virtual"
		if r.SystemClock {
			clk = "system"
		}
		out.Line(fmt.Sprintf("now %s offset %+.6fs %s stratum %d freq %+.3fppm pending %+.6fs clock %s",
			r.Time, r.Offset, state, r.Stratum, r.FreqPPM, r.Pending, clk))
	}
	return nil
}
