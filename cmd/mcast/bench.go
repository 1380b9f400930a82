package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"slices"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

var benchFlags = cli.WithEnv(tool, append(cli.NodeFlags(),
	&ucli.StringFlag{Name: "order", Value: "fifo", Usage: "unordered, fifo or causal"},
	&ucli.IntFlag{Name: "size", Value: 64, Usage: "message size in bytes (at least 20: sequence, send time, checksum)"},
	&ucli.IntFlag{Name: "count", Value: 100000, Usage: "messages this member sends"},
	&ucli.IntFlag{Name: "rate", Usage: "messages per second this member sends (0: as fast as the group takes them)"},
	lingerFlag,
))

// benchCommand is 'mcast bench': a flood in the style of corosync's
// cpghum, on the same member as 'mcast run'.
func benchCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "bench",
		Usage: "flood the group with numbered, checksummed messages and report throughput and latency",
		Description: `Runs one member that sends --count messages of --size bytes (at --rate per
second, or as fast as the group takes them) while delivering everyone
else's. Each message carries its sequence number, its send time and a
CRC-32 of the rest; every delivery is checked (sequence per sender,
checksum). At the end the member prints what it sent and delivered,
messages/s and MB/s delivered, and the latency percentiles (delivery time
minus send time, so members must share a clock: one host, or synchronised
ones), and the one-way UDP latency on loopback measured beside it. Run it
on every member at once.

Examples:
   mcast bench --id 1 --peers @peers.txt --count 200000 --size 64
   mcast bench --id 2 --peers @peers.txt --rate 1000 --count 5000 --json`,
		Flags:  benchFlags,
		Action: bench,
	}
}

const benchHeader = 20 // seq 8, send time 8, crc 4

func bench(c *ucli.Context) error {
	order, err := mcast.ParseOrder(c.String("order"))
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--order: %v", err)
	}
	size, count, rate := c.Int("size"), c.Int("count"), c.Int("rate")
	if size < benchHeader || size > mcast.MaxPayload || count < 0 || rate < 0 {
		return cli.Exitf(cli.ExitUsage, "--size must be %d to %d, --count and --rate not negative", benchHeader, mcast.MaxPayload)
	}
	udp := udpBound()
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	self, cm := mb.ID, mb.Common
	m, err := mcast.New(mcast.Config{ID: self, Peers: cli.IDs(cm.Peers), Order: order})
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	drv := driver.New[mcast.Msg](m, mcast.Codec{}, mb.Net, driver.Config{Framer: mb.Framer, Log: cm.Log})
	live, err := mb.Start(drv, "order", order, "size", size, "count", count, "rate", rate)
	if err != nil {
		return err
	}
	defer live.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	room := make(chan struct{}, 1)
	sendErr := make(chan error, 1)
	start := time.Now()
	go func() {
		filler := make([]byte, size-benchHeader)
		for i := range filler {
			filler[i] = byte('a' + i%26)
		}
		send := func(items []mcast.Item) error {
			for {
				err := drv.Request(ctx, mcast.Msg{Type: mcast.MsgSend, Items: items})
				if !errors.Is(err, mcast.ErrFull) {
					return err
				}
				select {
				case <-room:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		batch := 256
		var tick *time.Ticker
		if rate > 0 {
			batch = 1
			tick = time.NewTicker(time.Second / time.Duration(rate))
			defer tick.Stop()
		}
		for seq := 1; seq <= count; {
			var items []mcast.Item
			for ; seq <= count && len(items) < batch; seq++ {
				items = append(items, mcast.Item{Payload: benchPayload(uint64(seq), filler)})
			}
			if tick != nil {
				<-tick.C
				// The send time goes in as late as possible.
				binary.BigEndian.PutUint64(items[0].Payload[8:], uint64(time.Now().UnixNano()))
				stampCRC(items[0].Payload)
			}
			if err := send(items); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- drv.Request(ctx, mcast.Msg{Type: mcast.MsgEnd})
	}()
	var (
		lat       []time.Duration
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
		res := map[string]any{"event": "bench", "member": self, "order": order.String(), "size": size, "sent": count,
			"delivered": delivered, "seconds": elapsed.Seconds(), "msgs_per_s": float64(delivered) / elapsed.Seconds(),
			"mb_per_s": float64(bytes) / elapsed.Seconds() / 1e6, "p50_us": pct(0.5).Microseconds(), "p90_us": pct(0.9).Microseconds(),
			"p99_us": pct(0.99).Microseconds(), "max_us": pct(1).Microseconds(), "errors": errs, "udp_one_way_us": udp.Microseconds()}
		text := fmt.Sprintf("member %d %s size %d: sent %d, delivered %d in %.2fs: %.0f msgs/s, %.2f MB/s; latency p50 %v p90 %v p99 %v max %v; errors %d; UDP one-way on loopback %v",
			self, order, size, count, delivered, elapsed.Seconds(), float64(delivered)/elapsed.Seconds(), float64(bytes)/elapsed.Seconds()/1e6,
			pct(0.5), pct(0.9), pct(0.99), pct(1), errs, udp)
		if firstErr != "" {
			text += "; first error: " + firstErr
			res["first_error"] = firstErr
		}
		cm.Out.Value(text, res)
		if errs > 0 {
			return cli.Exitf(1, "%d deliveries failed their checks", errs)
		}
		return nil
	}
	for {
		select {
		case err := <-sendErr:
			if err != nil {
				return err
			}
			linger = time.After(c.Duration("linger"))
		case <-linger:
			cm.Log.Warn("--linger ran out before the group finished")
			return report()
		case ev := <-live.Events:
			switch ev := ev.(type) {
			case mcast.SendEvent:
				delivered++
				bytes += len(ev.Payload)
				lastDeliv = time.Now()
			case mcast.DeliverEvent:
				now := time.Now()
				delivered++
				bytes += len(ev.Payload)
				lastDeliv = now
				seq, sent, ok := benchCheck(ev.Payload)
				want := next[ev.Sender] + 1
				if order != mcast.Unordered && seq != want || !ok {
					errs++
					if firstErr == "" {
						firstErr = fmt.Sprintf("from %d: message %d (want %d), checksum ok %v", ev.Sender, seq, want, ok)
					}
				}
				next[ev.Sender] = max(next[ev.Sender], seq)
				lat = append(lat, now.Sub(time.Unix(0, int64(sent))))
			case mcast.RoomEvent:
				select {
				case room <- struct{}{}:
				default:
				}
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

func benchPayload(seq uint64, filler []byte) []byte {
	p := make([]byte, benchHeader+len(filler))
	binary.BigEndian.PutUint64(p, seq)
	binary.BigEndian.PutUint64(p[8:], uint64(time.Now().UnixNano()))
	copy(p[benchHeader:], filler)
	stampCRC(p)
	return p
}

func stampCRC(p []byte) {
	binary.BigEndian.PutUint32(p[16:], crc32.ChecksumIEEE(append(slices.Clone(p[:16]), p[benchHeader:]...)))
}

func benchCheck(p []byte) (seq, sent uint64, ok bool) {
	if len(p) < benchHeader {
		return 0, 0, false
	}
	seq, sent = binary.BigEndian.Uint64(p), binary.BigEndian.Uint64(p[8:])
	return seq, sent, binary.BigEndian.Uint32(p[16:]) == crc32.ChecksumIEEE(append(slices.Clone(p[:16]), p[benchHeader:]...))
}

// udpBound measures the one-way UDP latency on loopback: half the median
// round trip of 1,000 ping-pongs between two sockets, the floor under any
// delivery latency here.
func udpBound() time.Duration {
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
