package driver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/clock"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/election"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

type member struct {
	drv    *driver.Driver[election.Msg]
	events chan node.Event
	cancel context.CancelFunc
	done   chan error
}

// startMembers runs n election machines, each under its own driver, on an
// in-memory network.
func startMembers(t *testing.T, net *transport.Network, n int, key []byte) map[node.ID]*member {
	t.Helper()
	var ids []node.ID
	for i := 1; i <= n; i++ {
		ids = append(ids, node.ID(i))
	}
	out := map[node.ID]*member{}
	for _, id := range ids {
		m, err := election.New(election.Config{ID: id, Peers: ids, Heartbeat: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		f, _ := wire.NewFramer("test", id, 1, key)
		ctx, cancel := context.WithCancel(context.Background())
		mb := &member{drv: driver.New[election.Msg](m, election.Codec{}, net.Endpoint(id), driver.Config{Framer: f}),
			events: make(chan node.Event, 100), cancel: cancel, done: make(chan error, 1)}
		go func() { mb.done <- mb.drv.Run(ctx, func(ev node.Event) { mb.events <- ev }) }()
		out[id] = mb
		t.Cleanup(func() { cancel(); <-mb.done })
	}
	return out
}

func waitLeader(t *testing.T, mb *member, want node.ID) election.LeaderEvent {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev := <-mb.events:
			if le, ok := ev.(election.LeaderEvent); ok && le.Leader == want {
				return le
			}
		case <-timeout:
			t.Fatalf("no leader %d within 5s", want)
		}
	}
}

func TestDriverElectsAndAnswersStatus(t *testing.T) {
	key := make([]byte, wire.KeySize)
	net := transport.NewNetwork()
	ms := startMembers(t, net, 3, key)
	for _, mb := range ms {
		waitLeader(t, mb, 3)
	}
	// A status client outside the member list.
	f, _ := wire.NewFramer("test", 0xF0000001, 1, key)
	rep, err := driver.Query(context.Background(), f, net.Endpoint(0xF0000001), []node.ID{1, 2, 3, 9}, 300*time.Millisecond)
	if err != nil || len(rep) != 3 {
		t.Fatalf("status: %v, %d answers", err, len(rep))
	}
	var st struct{ Leader node.ID }
	json.Unmarshal(rep[2].Status, &st)
	if st.Leader != 3 || rep[2].Counters["accepted"] == 0 || !rep[2].Sealed {
		t.Fatalf("status of 2: %+v %s", rep[2], rep[2].Status)
	}
	// A local request goes through the same goroutine: member 3 retires,
	// and the others elect 2 without waiting for a timeout.
	if err := ms[3].drv.Request(context.Background(), election.Msg{Type: election.MsgRetire}); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, ms[1], 2)
}

func TestDriverCountsGarbage(t *testing.T) {
	net := transport.NewNetwork()
	ms := startMembers(t, net, 1, nil)
	waitLeader(t, ms[1], 1)
	junk := net.Endpoint(50)
	f, _ := wire.NewFramer("test", 50, 1, nil)
	frame, _ := f.Seal(wire.FamilyElection, 99, 1, []byte{1, 2, 3}) // unknown type
	junk.Send(1, frame)
	junk.Send(1, []byte("not a frame"))
	fw, _ := f.Seal(wire.FamilyMutex, 1, 1, nil) // another protocol
	junk.Send(1, fw)
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := ms[1].drv.Stats()
		if s["dropped_undecodable"] == 1 && s["dropped_malformed"] == 1 && s["dropped_wrong_family"] == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("counters: %v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ExampleDriver() {
	net := transport.NewNetwork()
	m, _ := election.New(election.Config{ID: 1, Peers: []node.ID{1}})
	f, _ := wire.NewFramer("example", 1, 1, nil)
	d := driver.New[election.Msg](m, election.Codec{}, net.Endpoint(1), driver.Config{Framer: f})
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan node.Event, 10)
	go d.Run(ctx, func(ev node.Event) { events <- ev })
	fmt.Println(<-events) // a single member elects itself after one timeout
	cancel()
	// Output: leader 1 term 1
}

// TestToolControlFrames: a tool's own control frames (ControlTool and up)
// reach Config.Control with the authenticated sender; a driver without it
// counts them as wrong family; the driver's own types cannot be sent.
func TestToolControlFrames(t *testing.T) {
	key := make([]byte, wire.KeySize)
	net := transport.NewNetwork()
	got := make(chan string, 4)
	start := func(id node.ID, control func(node.ID, uint8, []byte)) *driver.Driver[election.Msg] {
		m, err := election.New(election.Config{ID: id, Peers: []node.ID{1, 2, 3}, Heartbeat: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		f, _ := wire.NewFramer("test", id, 1, key)
		d := driver.New[election.Msg](m, election.Codec{}, net.Endpoint(id), driver.Config{Framer: f, Control: control})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx, func(node.Event) {}) }()
		t.Cleanup(func() { cancel(); <-done })
		return d
	}
	d1 := start(1, nil)
	start(2, func(from node.ID, typ uint8, body []byte) { got <- fmt.Sprintf("%d %d %s", from, typ, body) })
	d3 := start(3, nil)
	if err := d1.SendControl(2, driver.ControlTool+1, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		if g != "1 17 hello" {
			t.Fatalf("Control got %q", g)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the tool's control frame never arrived")
	}
	before := d3.Stats()["dropped_wrong_family"]
	if err := d1.SendControl(3, driver.ControlTool, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for d3.Stats()["dropped_wrong_family"] == before {
		if time.Now().After(deadline) {
			t.Fatal("a driver without Control did not count the tool's frame as wrong family")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := d1.SendControl(2, driver.ControlStatusQuery, nil); err == nil {
		t.Fatal("SendControl sent a status query, the driver's own type")
	}
}

// TestNoAmplification: without a key, a status answer is never larger
// than the query that asked for it (the query's source may be forged):
// a bare query gets nothing or a truncated answer, while Query, which
// pads and asks again, still gets the whole status.
func TestNoAmplification(t *testing.T) {
	net := transport.NewNetwork()
	ms := startMembers(t, net, 1, nil)
	waitLeader(t, ms[1], 1)
	asker := net.Endpoint(0xF0000002)
	f, _ := wire.NewFramer("test", 0xF0000002, 1, nil)
	answers := make(chan []byte, 8)
	go func() {
		for {
			p, err := asker.Recv()
			if err != nil {
				return
			}
			answers <- p.Data
		}
	}()
	answered := 0
	for _, pad := range []int{0, 40, 200} {
		q, _ := f.Seal(wire.FamilyControl, driver.ControlStatusQuery, 1, make([]byte, pad))
		if err := asker.Send(1, q); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-answers:
			answered++
			if len(a) > len(q) {
				t.Fatalf("a %d-byte query got a %d-byte answer", len(q), len(a))
			}
		case <-time.After(300 * time.Millisecond): // no answer at all is allowed
		}
	}
	if answered == 0 {
		t.Fatal("not even the 200-byte query got its truncated answer")
	}
	asker.Close()
	qf, _ := wire.NewFramer("test", 0xF0000003, 1, nil)
	rep, err := driver.Query(context.Background(), qf, net.Endpoint(0xF0000003), []node.ID{1}, time.Second)
	if err != nil || len(rep) != 1 || len(rep[1].Status) == 0 || rep[1].Truncated {
		t.Fatalf("Query: %v %+v", err, rep)
	}
}

// lineCounter counts the log lines written to it.
type lineCounter struct{ n atomic.Int64 }

func (l *lineCounter) Write(p []byte) (int, error) {
	l.n.Add(int64(bytes.Count(p, []byte("\n"))))
	return len(p), nil
}

// TestRejectionsLogSparingly: a flood of messages the machine rejects
// (here from a non-member) is counted one by one but logged at most once
// a second.
func TestRejectionsLogSparingly(t *testing.T) {
	net := transport.NewNetwork()
	lines := &lineCounter{}
	m, _ := election.New(election.Config{ID: 1, Peers: []node.ID{1}})
	f, _ := wire.NewFramer("test", 1, 1, nil)
	d := driver.New[election.Msg](m, election.Codec{}, net.Endpoint(1), driver.Config{Framer: f,
		Log: slog.New(slog.NewTextHandler(lines, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, func(node.Event) {}) }()
	defer func() { cancel(); <-done }()
	stranger := net.Endpoint(50)
	sf, _ := wire.NewFramer("test", 50, 1, nil)
	typ, body, _ := election.Codec{}.Marshal(election.Msg{Type: election.MsgHeartbeat, Leader: 50, Term: 1})
	for i := 0; i < 2000; i++ {
		frame, _ := sf.Seal(wire.FamilyElection, typ, 1, body)
		stranger.Send(1, frame)
	}
	deadline := time.Now().Add(5 * time.Second)
	for d.Stats()["rejected_by_protocol"] < 2000 {
		if time.Now().After(deadline) {
			t.Fatalf("rejected %d of 2000", d.Stats()["rejected_by_protocol"])
		}
		time.Sleep(5 * time.Millisecond) // polling a counter
	}
	if n := lines.n.Load(); n > 5 {
		t.Fatalf("2,000 rejections wrote %d log lines", n)
	}
}

// bigMachine sends one message too large for a frame at its first Tick.
type bigMachine struct{ out []node.Envelope[[]byte] }

func (b *bigMachine) Step(time.Time, node.Envelope[[]byte]) error { return nil }
func (b *bigMachine) Tick(time.Time) {
	b.out = append(b.out, node.Envelope[[]byte]{From: 1, To: 2, Msg: make([]byte, wire.MaxFrame)})
}
func (b *bigMachine) Ready() node.Ready[[]byte] {
	r := node.Ready[[]byte]{Msgs: b.out}
	b.out = nil
	return r
}

type rawCodec struct{}

func (rawCodec) Family() wire.Family                         { return wire.FamilyMcast }
func (rawCodec) Marshal(m []byte) (uint8, []byte, error)     { return 1, m, nil }
func (rawCodec) Unmarshal(_ uint8, p []byte) ([]byte, error) { return p, nil }

// TestSendFailureIsAnError: a message that cannot be framed is counted
// and logged at error level, not at debug level where nobody sees it.
func TestSendFailureIsAnError(t *testing.T) {
	net := transport.NewNetwork()
	var buf bytes.Buffer
	f, _ := wire.NewFramer("test", 1, 1, nil)
	d := driver.New[[]byte](&bigMachine{}, rawCodec{}, net.Endpoint(1), driver.Config{Framer: f,
		Log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the first Tick runs before Run looks at ctx
	if err := d.Run(ctx, func(node.Event) {}); err != nil {
		t.Fatal(err)
	}
	if d.Stats()["send_errors"] != 1 || !bytes.Contains(buf.Bytes(), []byte("level=ERROR msg=\"send failed\"")) {
		t.Fatalf("send_errors %d, log:\n%s", d.Stats()["send_errors"], buf.String())
	}
}

// Probe reads what a status query answers, on the driver's goroutine, and
// fails within its context when the loop is not turning.
func TestProbe(t *testing.T) {
	net := transport.NewNetwork()
	ms := startMembers(t, net, 3, nil)
	waitLeader(t, ms[1], 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rep, err := ms[1].drv.Probe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Leader node.ID }
	if err := json.Unmarshal(rep.Status, &st); err != nil || st.Leader != 3 || rep.ID != 1 || rep.Counters["accepted"] == 0 {
		t.Fatalf("probe: %+v %s (%v)", rep, rep.Status, err)
	}
	// A driver that is not running never takes the probe up.
	m, _ := election.New(election.Config{ID: 1, Peers: []node.ID{1, 2}})
	f, _ := wire.NewFramer("test", 1, 1, nil)
	idle := driver.New[election.Msg](m, election.Codec{}, net.Endpoint(7), driver.Config{Framer: f})
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := idle.Probe(short); err == nil {
		t.Fatal("a driver that is not running answered a probe")
	}
}

// tickMachine records the times it was ticked at and wants a wake-up an
// hour after each.
type tickMachine struct{ ticks []time.Time }

func (m *tickMachine) Step(time.Time, node.Envelope[[]byte]) error { return nil }
func (m *tickMachine) Tick(now time.Time)                          { m.ticks = append(m.ticks, now) }
func (m *tickMachine) Ready() node.Ready[[]byte] {
	return node.Ready[[]byte]{Wake: m.ticks[len(m.ticks)-1].Add(time.Hour)}
}

// TestOverdueTimerRunsFirst: a request that arrives when the machine's
// wake-up is already past (the process was stopped or starved, so the
// timer and the request are ready together) is served after the overdue
// Tick, never from the state of before the stall: a status query after a
// long stop must not name a peer silent all that time as alive.
func TestOverdueTimerRunsFirst(t *testing.T) {
	net := transport.NewNetwork()
	f, _ := wire.NewFramer("test", 1, 1, nil)
	clk := clock.NewManual(time.Unix(1000, 0))
	m := &tickMachine{}
	d := driver.New[[]byte](m, rawCodec{}, net.Endpoint(1), driver.Config{Framer: f, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, func(node.Event) {}) }()
	defer func() { cancel(); <-done }()
	// The wake-up is an hour of real time away, so only the overdue
	// check can run it: the manual clock jumps two hours (the stall).
	var before []time.Time
	if err := d.Do(ctx, func() { before = slices.Clone(m.ticks) }); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	var seen []time.Time
	if err := d.Do(ctx, func() { seen = slices.Clone(m.ticks) }); err != nil {
		t.Fatal(err)
	}
	if len(before) != 1 || len(seen) != 2 || !seen[1].Equal(time.Unix(1000, 0).Add(2*time.Hour)) {
		t.Fatalf("ticks before the stall %v, seen by the request after it %v: the overdue timer did not run first", before, seen)
	}
}
