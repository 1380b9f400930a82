package clockd

import (
	"encoding/binary"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/clocksync"
)

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
	Delay  float64 `json:"delay_s"`   // RFC 5905's round-trip delay, (T4 − T1) − (T3 − T2)
	OneWay float64 `json:"one_way_s"` // Tanenbaum's δ, half the round trip: ((T2 − T1) + (T4 − T3)) / 2
}

// QueryConfig is what `clocksync query` is told by its flags.
type QueryConfig struct {
	Target  string        // HOST:PORT (port 123 if left out)
	Samples int           // requests to send, 1 to 64
	Timeout time.Duration // wait this long for each answer
	Pause   time.Duration // between requests
}

// Query sends the requests, prints each sample and the minimum-delay pick
// on out; exit 69 when the server does not answer, 75 when it answers
// unsynchronised.
func Query(cfg QueryConfig, out *cli.Output) error {
	target := cfg.Target
	if _, _, err := net.SplitHostPort(target); err != nil {
		target = net.JoinHostPort(target, "123")
	}
	samples := cfg.Samples
	if samples < 1 || samples > 64 {
		return cli.Exitf(cli.ExitUsage, "--samples must be 1 to 64")
	}
	conn, err := net.Dial("udp", target)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	defer conn.Close()
	var f clocksync.Filter
	var last clocksync.Packet
	for i := 1; i <= samples; i++ {
		if i > 1 {
			time.Sleep(cfg.Pause) // pacing between requests, not synchronisation
		}
		rep, s, ok := exchange(conn, time.Now, cfg.Timeout)
		if !ok {
			continue
		}
		last = rep
		f.Add(s)
		so := sampleOut{Event: "sample", N: i, T1: s.T1.Format(time.RFC3339Nano), T2: s.T2.Format(time.RFC3339Nano),
			T3: s.T3.Format(time.RFC3339Nano), T4: s.T4.Format(time.RFC3339Nano),
			Offset: s.Offset().Seconds(), Delay: s.Delay().Seconds(), OneWay: s.Delay().Seconds() / 2}
		if out.IsJSON() {
			out.JSON(so)
		} else {
			out.Line(fmt.Sprintf("sample %d offset %+.6fs delay %.6fs one-way %.6fs", i, so.Offset, so.Delay, so.OneWay))
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
		"delay_s": best.Delay().Seconds(), "one_way_s": best.Delay().Seconds() / 2, "stratum": last.Stratum, "leap": last.Leap,
		"root_distance_s": dist.Seconds(), "refid": refid(last), "samples": samples}
	if out.IsJSON() {
		out.JSON(res)
	} else {
		out.Line(fmt.Sprintf("server %s stratum %d refid %s leap %d offset %+.6fs delay %.6fs one-way %.6fs root-distance %.6fs",
			target, last.Stratum, refid(last), last.Leap, best.Offset().Seconds(), best.Delay().Seconds(), best.Delay().Seconds()/2, dist.Seconds()))
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
