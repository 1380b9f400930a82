package mcastd

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"hash/crc32"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// BenchConfig is one member's part of a flood.
type BenchConfig struct {
	Self  node.ID
	Order mcast.Order
	// Group: a dynamic group in this total order (sending, and the clock,
	// start once the group has formed).
	Group bool
	Total group.Total
	// Members: with Group, sending starts once a view has this many, and
	// a member leaves once it has delivered Members·Count messages (every
	// member sends Count), or --linger after its own sends, counting what
	// is missing as errors.
	Members int
	Size    int // bytes per message, at least BenchHeader
	Count   int
	Rate    int // per second; 0: as fast as the group takes them
	Linger  time.Duration

	trace *tracer // TraceEnv: deliveries are traced too
	// counters reads the member's counters (nil: none); the report
	// carries TOTEM's token holds from them, and a fixed group's copies
	// sent again and got twice.
	counters func() map[string]uint64
}

// BenchHeader is a bench message's header: sequence, send time, CRC-32.
const BenchHeader = 20

// Bench floods the group through m in the style of corosync's cpghum:
// numbered messages that carry their send time and a CRC-32 of the rest,
// every delivery checked, and at the end one report (text or JSON on out)
// with msgs/s, MB/s, latency percentiles and the loopback UDP one-way
// latency measured before the start.
func Bench(live *cli.Running, m BenchMember, cfg BenchConfig, out *cli.Output, log *slog.Logger) error {
	udp := UDPBound()
	size, count, rate, self, order := cfg.Size, cfg.Count, cfg.Rate, cfg.Self, cfg.Order.String()
	if cfg.Group {
		order = "total " + cfg.Total.String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sendErr := make(chan error, 1)
	start := time.Now()
	formed := make(chan struct{}) // closed once the group has formed
	if !cfg.Group {
		close(formed)
	}
	go func() {
		select {
		case <-formed:
		case <-ctx.Done():
			return
		}
		filler := make([]byte, size-BenchHeader)
		for i := range filler {
			filler[i] = byte('a' + i%26)
		}
		batch := 256
		var pace pacer
		if rate > 0 {
			pace = newPacer(time.Now(), time.Second/time.Duration(rate))
			defer pace.stop()
		}
		for seq := 1; seq <= count; {
			if pace != nil {
				due, err := pace.wait()
				if err != nil {
					sendErr <- err
					return
				}
				batch = min(256, max(1, due-seq+1)) // a long lag drains 256 a period
			}
			var lines [][]byte
			for ; seq <= count && len(lines) < batch; seq++ {
				lines = append(lines, benchPayload(uint64(seq), filler))
			}
			if pace != nil {
				// The send time goes in as late as possible: the
				// moment the messages are handed to the member, as
				// cpgflood stamps its own just before cpg_mcast_joined.
				now := uint64(time.Now().UnixNano())
				for _, l := range lines {
					binary.BigEndian.PutUint64(l[8:], now)
					stampCRC(l)
				}
			}
			if err := m.Submit(ctx, lines); err != nil {
				sendErr <- err
				return
			}
		}
		if cfg.Group && cfg.Members > 0 {
			// As cpgflood: a member leaves only once it has every
			// member's messages (main loop), or --linger runs out.
			sendErr <- nil
			return
		}
		sendErr <- m.End(ctx)
	}()
	// With a dynamic group every member sends Count: all of them have
	// come once Members·Count are delivered here.
	want := 0
	if cfg.Group && cfg.Members > 0 {
		want = cfg.Members * count
	}
	ending := false
	end := func() {
		if !ending {
			ending = true
			go func() {
				if err := m.End(ctx); err != nil && ctx.Err() == nil {
					log.Error("leaving the group", "err", err)
				}
			}()
		}
	}
	sendsDone := false
	var (
		lat       = make([]time.Duration, 0, want) // every delivery's, grown only past want
		delivered int
		bytes     int
		errs      int
		next      = map[node.ID]uint64{}
		linger    <-chan time.Time
		firstErr  string
		lastDeliv time.Time
	)
	report := func() error {
		elapsed := lastDeliv.Sub(start)
		if elapsed <= 0 {
			elapsed = time.Since(start)
		}
		slices.Sort(lat)
		pct := func(p float64) time.Duration {
			if len(lat) == 0 {
				return 0
			}
			return lat[min(len(lat)-1, int(p*float64(len(lat))))]
		}
		res := map[string]any{"event": "bench", "member": self, "order": order, "size": size, "sent": count,
			"delivered": delivered, "seconds": elapsed.Seconds(), "msgs_per_s": float64(delivered) / elapsed.Seconds(),
			"mb_per_s": float64(bytes) / elapsed.Seconds() / 1e6, "p50_us": pct(0.5).Microseconds(), "p90_us": pct(0.9).Microseconds(),
			"p99_us": pct(0.99).Microseconds(), "max_us": pct(1).Microseconds(), "errors": errs, "udp_one_way_us": udp.Microseconds()}
		text := fmt.Sprintf("member %d %s size %d: sent %d, delivered %d in %.2fs: %.0f msgs/s, %.2f MB/s; latency p50 %v p90 %v p99 %v max %v; errors %d; UDP one-way on loopback %v",
			self, order, size, count, delivered, elapsed.Seconds(), float64(delivered)/elapsed.Seconds(), float64(bytes)/elapsed.Seconds()/1e6,
			pct(0.5), pct(0.9), pct(0.99), pct(1), errs, udp)
		if cfg.Group && cfg.Total == group.TotalTotem && cfg.counters != nil {
			// How often this member kept an idle token, and the
			// hold-cancels it sent and took (group_totem.go).
			c := cfg.counters()
			res["tokens"], res["token_held"] = c["tokens"], c["token-held"]
			res["hold_cancel_sent"], res["hold_cancelled"] = c["hold-cancel-sent"], c["hold-cancelled"]
			text += fmt.Sprintf("; token came %d times, held %d, hold-cancels sent %d, taken %d", c["tokens"], c["token-held"], c["hold-cancel-sent"], c["hold-cancelled"])
		}
		if !cfg.Group && cfg.counters != nil {
			// What this member sent again (its own and others'
			// messages) and got twice.
			c := cfg.counters()
			res["resent"], res["duplicates"] = c["retransmitted"], c["duplicates"]
			text += fmt.Sprintf("; sent again %d, got twice %d", c["retransmitted"], c["duplicates"])
		}
		if firstErr != "" {
			text += "; first error: " + firstErr
			res["first_error"] = firstErr
		}
		out.Value(text, res)
		if errs > 0 {
			return cli.Exitf(1, "%d deliveries failed their checks", errs)
		}
		return nil
	}
	deliver := func(sender node.ID, payload []byte) {
		if cfg.trace != nil {
			cfg.trace.delivered(sender, payload)
		}
		now := time.Now()
		delivered++
		bytes += len(payload)
		lastDeliv = now
		seq, sent, ok := benchCheck(payload)
		want := next[sender] + 1
		if cfg.Order != mcast.Unordered && seq != want || !ok {
			errs++
			if firstErr == "" {
				firstErr = fmt.Sprintf("from %d: message %d (want %d), checksum ok %v", sender, seq, want, ok)
			}
		}
		next[sender] = max(next[sender], seq)
		lat = append(lat, now.Sub(time.Unix(0, int64(sent))))
	}
	for {
		select {
		case err := <-sendErr:
			if err != nil {
				return err
			}
			sendsDone = true
			linger = time.After(cfg.Linger)
			if want > 0 && delivered >= want {
				end()
			}
		case <-linger:
			if want > 0 && delivered < want {
				// Missing messages are a failed check, never a quiet
				// short count.
				errs += want - delivered
				if firstErr == "" {
					firstErr = fmt.Sprintf("%d of the %d messages never delivered here", want-delivered, want)
				}
			}
			log.Warn("--linger ran out before the group finished")
			return report()
		case ev := <-live.Events:
			switch ev := ev.(type) {
			case mcast.SendEvent:
				delivered++
				bytes += len(ev.Payload)
				lastDeliv = time.Now()
			case mcast.DeliverEvent:
				deliver(ev.Sender, ev.Payload)
			case group.DeliverEvent:
				deliver(ev.Sender, ev.Payload)
				if want > 0 && sendsDone && delivered >= want {
					end()
				}
			case group.ViewEvent:
				// On stderr, so that a failed flood's log shows who
				// left and when (scripts/bench-mcast.sh keeps it).
				log.Info("view "+ev.String(), "view", ev.View, "leader", ev.Leader)
				select {
				case <-formed:
				default:
					if len(ev.Members) >= cfg.Members {
						start = time.Now()
						close(formed)
					}
				}
			case group.LostEvent:
				// Messages of this member the others may never deliver:
				// a hole in its stream at their end, so a failed check.
				errs += len(ev.Seqs)
				if firstErr == "" {
					firstErr = ev.String()
				}
				log.Warn(ev.String(), "incarnation", ev.Inc)
			case group.RemovedEvent:
				log.Warn("removed from the view", "view", ev.View, "incarnation", ev.Inc)
			case group.MissedEvent:
				// Its holes fail the sequence check (or the count) of
				// what follows: said here, counted there.
				log.Warn(ev.String())
			case mcast.RoomEvent:
				m.Room()
			case mcast.DoneEvent:
				return report()
			}
		case s := <-live.Signals:
			return &cli.ExitError{Code: cli.SignalCode(s)}
		case err := <-live.Done:
			return cli.Failed(err)
		}
	}
}

// BenchMember is the member a flood goes through: a fixed group's
// (Multicast) or a dynamic group's (Group).
type BenchMember interface {
	Submit(ctx context.Context, lines [][]byte) error
	End(ctx context.Context) error
	Room()
}

func benchPayload(seq uint64, filler []byte) []byte {
	p := make([]byte, BenchHeader+len(filler))
	binary.BigEndian.PutUint64(p, seq)
	binary.BigEndian.PutUint64(p[8:], uint64(time.Now().UnixNano()))
	copy(p[BenchHeader:], filler)
	stampCRC(p)
	return p
}

func stampCRC(p []byte) { binary.BigEndian.PutUint32(p[16:], benchCRC(p)) }

// benchCRC is the checksum of a bench message: its sequence number and
// send time, then its filler (the header without the checksum's own
// bytes), computed in place: a flood checks every message at every
// member.
func benchCRC(p []byte) uint32 {
	return crc32.Update(crc32.ChecksumIEEE(p[:16]), crc32.IEEETable, p[BenchHeader:])
}

func benchCheck(p []byte) (seq, sent uint64, ok bool) {
	if len(p) < BenchHeader {
		return 0, 0, false
	}
	seq, sent = binary.BigEndian.Uint64(p), binary.BigEndian.Uint64(p[8:])
	return seq, sent, binary.BigEndian.Uint32(p[16:]) == benchCRC(p)
}

// UDPBound measures the one-way UDP latency on loopback: half the median
// round trip of 1,000 ping-pongs between two sockets, the floor under any
// delivery latency here.
func UDPBound() time.Duration {
	a, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return 0
	}
	defer a.Close()
	b, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return 0
	}
	defer b.Close()
	go func() {
		buf := make([]byte, 64)
		for {
			n, from, err := b.ReadFromUDP(buf)
			if err != nil {
				return
			}
			b.WriteToUDP(buf[:n], from)
		}
	}()
	buf := make([]byte, 64)
	var rtts []time.Duration
	a.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := 0; i < 1000; i++ {
		t0 := time.Now()
		if _, err := a.WriteToUDP(buf, b.LocalAddr().(*net.UDPAddr)); err != nil {
			return 0
		}
		if _, _, err := a.ReadFromUDP(buf); err != nil {
			break
		}
		rtts = append(rtts, time.Since(t0))
	}
	if len(rtts) == 0 {
		return 0
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2] / 2
}
