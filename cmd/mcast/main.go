// Command mcast is group communication for scripts: lines on stdin are
// multicast to the group, and every member prints what it delivers on
// stdout, in the order the chosen guarantee promises. See pkg/mcast.
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

const tool = "mcast"

var runFlags = cli.WithEnv(tool, append(cli.NodeFlags(),
	&ucli.StringFlag{Name: "order", Value: "fifo", Usage: "unordered, fifo or causal"},
	lingerFlag,
	&ucli.BoolFlag{Name: "base64", Usage: "input lines are base64 and payloads are printed in base64 (binary-safe)"},
	&ucli.DurationFlag{Name: "period", Value: 50 * time.Millisecond, Usage: "how often members exchange digests (what each has received), which drives repair"},
	&ucli.DurationFlag{Name: "suspect", Value: time.Second, Usage: "a member silent this long no longer holds up 'delivered by all' at end of input"},
))

var lingerFlag = &ucli.DurationFlag{Name: "linger", Value: 30 * time.Second, Usage: "at the end, wait at most this long for the group to finish"}

var checkFlags = []ucli.Flag{
	&ucli.StringFlag{Name: "order", Value: "fifo", Usage: "the order the run promised: unordered, fifo or causal"},
}

func main() { cli.Main(newApp()) }

// newApp is the command line.
func newApp() *ucli.App {
	return &ucli.App{
		Name:  tool,
		Usage: "reliable FIFO and causal multicast for shell pipes",
		Commands: []*ucli.Command{
			{
				Name:  "run",
				Usage: "multicast each line of stdin; print each delivery on stdout",
				Description: `Runs one member of a fixed group. Each line of stdin is one message; each
delivery is one line on stdout: '<sender> <seq> <payload>' (with --json an
object with member, sender, seq, the vector timestamp under causal order,
and payload). A member delivers its own lines as it sends them, and prints
them then (with --json as 'send' events, from which 'mcast check' rebuilds
happens-before).

Orders: unordered (reliable: nothing lost, duplicated or invented among
members that do not crash, even when a sender crashes mid-multicast), fifo
(each sender's lines in the order sent), causal (a line after everything
its sender had seen when it wrote it), gossip (for big groups: each line
pushed to a few random members per round, gaps pulled; every member gets
it with high probability, in no particular order; --period is the round).

A line may be at most 61,440 bytes (one frame); a longer one stops mcast
with exit 64 before anything of it is sent: split it, or compress it and
use --base64. At end of input the member stays until every member it does
not suspect has ended its input too and everyone has delivered the same
(or --linger runs out), then exits 0: a group whose inputs all end leaves
nothing undelivered.

Examples:
   seq 1 5 | mcast run --id 1 --peers 1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003
   mcast run --id 2 --peers @peers.txt --order causal --json > 2.log
   tar c dir | base64 -w 1000 | mcast run --id 3 --peers @peers.txt --base64 --key-file cluster.key`,
				Flags:  runFlags,
				Action: run,
			},
			{
				Name:      "check",
				Usage:     "check the --json logs of a run: integrity, agreement and order",
				ArgsUsage: "LOG...",
				Description: `Reads the 'mcast run --json' output of every member (one file each) and
checks integrity (nothing delivered twice, nothing invented), agreement and
validity among the members that did not crash (a log that does not end with
its 'exit' line is a crashed member's), and with --order fifo or causal the
order, with happens-before rebuilt from the logs. Exits 0, or 1 with the
first counterexample.

Examples:
   mcast check --order causal 1.log 2.log 3.log`,
				Flags:  checkFlags,
				Action: check,
			},
			benchCommand(),
		},
	}
}

// maxLine is the longest input line: one payload that fits a frame.
const maxLine = mcast.MaxPayload

func run(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "run takes no arguments, got %q (the lines come on stdin)", c.Args().First())
	}
	if c.Duration("period") <= 0 || c.Duration("suspect") <= 0 || c.Duration("linger") < 0 {
		return cli.Exitf(cli.ExitUsage, "--period and --suspect must be positive, --linger not negative")
	}
	if c.String("order") == "gossip" {
		return runGossip(c)
	}
	order, err := mcast.ParseOrder(c.String("order"))
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--order: %v", err)
	}
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	self, cm := mb.ID, mb.Common
	m, err := mcast.New(mcast.Config{ID: self, Peers: cli.IDs(cm.Peers), Order: order, Period: c.Duration("period"),
		Suspect: c.Duration("suspect")})
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	drv := driver.New[mcast.Msg](m, mcast.Codec{}, mb.Net, driver.Config{Framer: mb.Framer, Log: cm.Log})
	live, err := mb.Start(drv, "order", order)
	if err != nil {
		return err
	}
	defer live.Stop()
	b64 := c.Bool("base64")
	// Deliveries are buffered and flushed whenever no event is waiting: a
	// quiet group's lines appear at once, a busy one's leave in large
	// writes (one write per line capped a member near 100,000 lines/s).
	stdout := bufio.NewWriterSize(os.Stdout, 64<<10)
	defer stdout.Flush()
	out := printer{out: cli.NewOutput(stdout, c.Bool(cli.FlagJSON)), w: stdout, member: self, b64: b64}

	// Lines go to the driver from their own goroutine: a Request waits for
	// the driver, which may be waiting for this loop to take its events.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sent := make(chan uint64, 1)
	inputErr := make(chan error, 1)
	room := make(chan struct{}, 1)
	go func() {
		n, err := feed(ctx, os.Stdin, b64, func(batch [][]byte) error {
			items := make([]mcast.Item, len(batch))
			for i, p := range batch {
				items[i].Payload = p
			}
			for {
				err := drv.Request(ctx, mcast.Msg{Type: mcast.MsgSend, Items: items})
				if !errors.Is(err, mcast.ErrFull) {
					return err
				}
				// The group lags: wait until it has caught up (backpressure
				// on the pipe instead of memory).
				select {
				case <-room:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		})
		if err == nil {
			err = drv.Request(ctx, mcast.Msg{Type: mcast.MsgEnd})
		}
		if err != nil {
			inputErr <- err
			return
		}
		sent <- n
	}()
	var (
		total  uint64
		done   bool
		linger <-chan time.Time
	)
	finish := func() error {
		out.exit(total)
		return stdout.Flush()
	}
	for {
		select {
		case err := <-inputErr:
			if errors.Is(err, context.Canceled) {
				continue
			}
			return err
		case total = <-sent:
			cm.Log.Info("end of input", "sent", total)
			if done {
				return finish()
			}
			linger = time.After(c.Duration("linger"))
		case <-linger:
			cm.Log.Warn("--linger ran out before every member had ended its input and delivered everything", "sent", total)
			return finish()
		case ev := <-live.Events:
			switch ev := ev.(type) {
			case mcast.DeliverEvent:
				out.deliver(ev)
			case mcast.SendEvent:
				out.send(ev)
			case mcast.RoomEvent:
				select {
				case room <- struct{}{}:
				default:
				}
			case mcast.DoneEvent:
				done = true
				if linger != nil {
					return finish()
				}
			}
			if len(live.Events) == 0 {
				if err := stdout.Flush(); err != nil {
					return cli.Exitf(cli.ExitUnavailable, "writing stdout: %v", err)
				}
			}
		case s := <-live.Signals:
			cm.Log.Info("signal: stopping", "signal", s)
			return &cli.ExitError{Code: cli.SignalCode(s)}
		case err := <-live.Done:
			return cli.Failed(err)
		}
	}
}

// feed reads lines from r and hands them (decoded with b64) to send, in
// batches of what is already there (at most batchMax lines): a fast
// producer fills frames, a slow one sends each line at once. A line longer
// than a frame, or bad base64, is a usage error naming the line.
func feed(ctx context.Context, r io.Reader, b64 bool, send func([][]byte) error) (uint64, error) {
	type chunk struct {
		lines [][]byte
		err   error
	}
	// The reader hands over what it has read whenever the sender is ready
	// for more: under load, big batches; when lines trickle in, one at a
	// time.
	chunks := make(chan chunk, 1)
	go func() {
		defer close(chunks)
		var n uint64 // lines so far
		emit := func(c chunk) bool {
			select {
			case chunks <- c:
				return true
			case <-ctx.Done():
				return false
			}
		}
		// Each read returns what stdin has: its complete lines are one
		// batch (a trickle sends lines one by one, a flood in bulk).
		buf := make([]byte, 0, 256<<10)
		for {
			if len(buf) == cap(buf) {
				grown := make([]byte, len(buf), 2*cap(buf))
				copy(grown, buf)
				buf = grown
			}
			k, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+k]
			var batch [][]byte
			start := 0
			for i := 0; i < len(buf); i++ {
				if buf[i] != '\n' {
					continue
				}
				n++
				p, perr := decodeLine(buf[start:i], n, b64)
				if perr != nil {
					emit(chunk{lines: batch, err: perr})
					return
				}
				batch = append(batch, p)
				start = i + 1
				if len(batch) == batchMax {
					if !emit(chunk{lines: batch}) {
						return
					}
					batch = nil
				}
			}
			rest := copy(buf, buf[start:])
			buf = buf[:rest]
			if limit := maxLine + 1; rest > limit && !b64 || rest > limit/3*4+8 {
				emit(chunk{lines: batch, err: cli.Exitf(cli.ExitUsage, "line %d is over the limit of %d bytes: split it (nothing of it was sent)", n+1, maxLine)})
				return
			}
			if err != nil {
				var final error
				if len(buf) > 0 { // a last line without a newline
					n++
					p, perr := decodeLine(buf, n, b64)
					if perr != nil {
						final = perr
					} else {
						batch = append(batch, p)
					}
				}
				if !errors.Is(err, io.EOF) && final == nil {
					final = cli.Exitf(cli.ExitUsage, "reading stdin: %v", err)
				}
				emit(chunk{lines: batch, err: final})
				return
			}
			if len(batch) > 0 && !emit(chunk{lines: batch}) {
				return
			}
		}
	}()
	var sent uint64
	for ch := range chunks {
		if len(ch.lines) > 0 {
			if err := send(ch.lines); err != nil {
				return sent, err
			}
			sent += uint64(len(ch.lines))
		}
		if ch.err != nil {
			return sent, ch.err
		}
	}
	return sent, ctx.Err()
}

// decodeLine turns the n-th input line into a payload: without its \r,
// base64-decoded with b64, within the frame limit.
func decodeLine(line []byte, n uint64, b64 bool) ([]byte, error) {
	p := slices.Clone(line)
	if len(p) > 0 && p[len(p)-1] == '\r' {
		p = p[:len(p)-1]
	}
	if b64 {
		d, err := base64.StdEncoding.DecodeString(string(p))
		if err != nil {
			return nil, cli.Exitf(cli.ExitUsage, "line %d is not base64: %v", n, err)
		}
		p = d
	}
	if len(p) > maxLine {
		return nil, cli.Exitf(cli.ExitUsage, "line %d is %d bytes, over the limit of %d: split it (nothing of it was sent)", n, len(p), maxLine)
	}
	return p, nil
}

// batchMax is the most lines one request to the member carries.
const batchMax = 256

// printer writes deliveries, and with --json the member's own sends and its
// clean exit, which is what 'mcast check' reads.
type printer struct {
	out    *cli.Output
	w      *bufio.Writer // the buffer under out: text lines go straight in
	member node.ID
	b64    bool
}

// logLine is one --json line of 'mcast run'.
type logLine struct {
	Time    string   `json:"time"`
	Event   string   `json:"event"`
	Member  node.ID  `json:"member"`
	Sender  node.ID  `json:"sender,omitempty"`
	Seq     uint64   `json:"seq,omitempty"`
	VT      []uint64 `json:"vt,omitempty"`
	Payload *string  `json:"payload,omitempty"`
	Sent    *uint64  `json:"sent,omitempty"`
}

func (p printer) payload(b []byte) string {
	if p.b64 {
		return base64.StdEncoding.EncodeToString(b)
	}
	return string(b)
}

func now() string { return time.Now().Format(time.RFC3339Nano) }

// text writes '<sender> <seq> <payload>' without formatting allocations:
// at a few hundred thousand lines a second they add up.
func (p printer) text(sender node.ID, seq uint64, payload []byte) {
	var num [48]byte
	b := strconv.AppendUint(num[:0], uint64(sender), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, ' ')
	p.w.Write(b)
	if p.b64 {
		enc := base64.NewEncoder(base64.StdEncoding, p.w)
		enc.Write(payload)
		enc.Close()
	} else {
		p.w.Write(payload)
	}
	p.w.WriteByte('\n')
}

func (p printer) deliver(ev mcast.DeliverEvent) {
	if !p.out.IsJSON() {
		p.text(ev.Sender, ev.Seq, ev.Payload)
		return
	}
	pl := p.payload(ev.Payload)
	p.out.JSON(logLine{Time: now(), Event: "deliver", Member: p.member, Sender: ev.Sender, Seq: ev.Seq, VT: ev.VT, Payload: &pl})
}

// send prints the member's own line, which it delivers as it sends it.
func (p printer) send(ev mcast.SendEvent) {
	if !p.out.IsJSON() {
		p.text(p.member, ev.Seq, ev.Payload)
		return
	}
	pl := p.payload(ev.Payload)
	p.out.JSON(logLine{Time: now(), Event: "send", Member: p.member, Seq: ev.Seq, VT: ev.VT, Payload: &pl})
}

func (p printer) exit(sent uint64) {
	if p.out.IsJSON() {
		p.out.JSON(logLine{Time: now(), Event: "exit", Member: p.member, Sent: &sent})
	}
}

func check(c *ucli.Context) error {
	order, err := mcast.ParseOrder(c.String("order"))
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--order: %v", err)
	}
	if c.Args().Len() == 0 {
		return cli.Exitf(cli.ExitUsage, "check needs the --json logs of the members (mcast check LOG...)")
	}
	logs := map[node.ID][]mcast.Record{}
	crashed := map[node.ID]bool{}
	deliveries := 0
	for _, file := range c.Args().Slice() {
		id, recs, clean, err := readLog(file)
		if err != nil {
			return cli.Exitf(cli.ExitUsage, "%s: %v", file, err)
		}
		if _, dup := logs[id]; dup {
			return cli.Exitf(cli.ExitUsage, "%s: a second log of member %d", file, id)
		}
		logs[id] = recs
		crashed[id] = !clean
		deliveries += len(recs)
	}
	if err := mcast.Check(order, logs, crashed); err != nil {
		fmt.Fprintf(os.Stderr, "mcast: check failed: %v\n", err)
		return &cli.ExitError{Code: 1}
	}
	var down []string
	for id, c := range crashed {
		if c {
			down = append(down, id.String())
		}
	}
	slices.Sort(down)
	msg := fmt.Sprintf("ok: %d members, %d sends and deliveries, %s order holds", len(logs), deliveries, order)
	if len(down) > 0 {
		msg += fmt.Sprintf("; members without a clean exit (agreement not required of them): %v", down)
	}
	fmt.Println(msg)
	return nil
}

// readLog reads one member's --json log.
func readLog(file string) (node.ID, []mcast.Record, bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, nil, false, err
	}
	defer f.Close()
	var (
		id    node.ID
		recs  []mcast.Record
		clean bool
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var lines [][]byte
	for sc.Scan() {
		lines = append(lines, slices.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		return 0, nil, false, err
	}
	for i, line := range lines {
		n := i + 1
		var l logLine
		if err := json.Unmarshal(line, &l); err != nil {
			if n == len(lines) {
				break // a last line cut short by a crash
			}
			return 0, nil, false, fmt.Errorf("line %d: %v", n, err)
		}
		if l.Member == node.None || id != node.None && l.Member != id {
			return 0, nil, false, fmt.Errorf("line %d: member %d in a log of member %d", n, l.Member, id)
		}
		id = l.Member
		pl := []byte(nil)
		if l.Payload != nil {
			pl = []byte(*l.Payload)
		}
		switch l.Event {
		case "send":
			recs = append(recs, mcast.Record{Send: true, Seq: l.Seq, Payload: pl})
		case "deliver":
			recs = append(recs, mcast.Record{Sender: l.Sender, Seq: l.Seq, Payload: pl})
		case "exit":
			clean = true
		default:
			return 0, nil, false, fmt.Errorf("line %d: unknown event %q", n, l.Event)
		}
	}
	if id == node.None {
		return 0, nil, false, errors.New("no member in this log")
	}
	return id, recs, clean, nil
}
