package mcastd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// gate is a stdout whose reader is stopped until Open.
type gate struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	open    chan struct{}
	once    sync.Once
	entered chan struct{} // a write is under way (closed once)
	enter   sync.Once
}

func newGate() *gate { return &gate{open: make(chan struct{}), entered: make(chan struct{})} }

func (g *gate) Write(p []byte) (int, error) {
	g.enter.Do(func() { close(g.entered) })
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

func (g *gate) Open() { g.once.Do(func() { close(g.open) }) }

func (g *gate) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.String()
}

// TestWriterNeverBlocksPush: chunks pushed while the write under way
// blocks queue up; Stalled says for how long; once the reader goes on,
// every chunk is written in order and Written sums their cost.
func TestWriterNeverBlocksPush(t *testing.T) {
	g := newGate()
	w := NewWriter(g)
	start := time.Now()
	for i := 0; i < 1000; i++ {
		w.Push([]byte(fmt.Sprintf("%d\n", i)), 1, 10)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("pushing to a blocked writer took %v", d)
	}
	<-g.entered
	if w.Stalled(time.Now().Add(time.Hour)) < time.Hour || w.Idle() {
		t.Fatal("a blocked write is not reported as stalled")
	}
	if written, pending := w.Lines(); written != 0 || pending != 1000 {
		t.Fatalf("lines written %d, pending %d", written, pending)
	}
	g.Open()
	w.Close()
	<-w.done
	var want strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if g.String() != want.String() || w.Written() != 10000 || !w.Idle() || w.Err() != nil {
		t.Fatalf("written %d (cost %d), err %v", len(g.String()), w.Written(), w.Err())
	}
}

// TestWriterError: a failed write is the writer's error from then on.
func TestWriterError(t *testing.T) {
	w := NewWriter(failWriter{})
	w.Push([]byte("x\n"), 1, 1)
	<-w.Progress()
	if !errors.Is(w.Err(), io.ErrClosedPipe) {
		t.Fatalf("err %v", w.Err())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// TestPrinter: text and JSON forms, bytes kept as they are (a carriage
// return included), base64, and the cost of the deliveries handed over.
func TestPrinter(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, 2, false, false)
	p.Deliver(mcast.DeliverEvent{Sender: 1, Seq: 7, Payload: []byte("a\r")})
	p.Send(mcast.SendEvent{Seq: 3, Payload: []byte("b")})
	p.GroupDeliver(group.DeliverEvent{View: 4, Sender: 3, Seq: 9, Payload: []byte("c")})
	p.View(group.ViewEvent{View: 4, Members: []group.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 1}}})
	p.Flush()
	p.Writer().Close()
	<-p.Writer().done
	want := "1 7 a\r\n2 3 b\n3 4.9 c\nview 4 members 1,2 joined - left -\n"
	if out.String() != want {
		t.Fatalf("text:\n%q\nwant\n%q", out.String(), want)
	}
	if c := p.Writer().Written(); c != mcast.Cost([]byte("a\r"))+mcast.Cost([]byte("b"))+mcast.Cost([]byte("c")) {
		t.Fatalf("cost %d", c)
	}
	if w, _ := p.Writer().Lines(); w != 4 {
		t.Fatalf("%d lines counted", w)
	}

	out.Reset()
	p = NewPrinter(&out, 2, true, true)
	p.Deliver(mcast.DeliverEvent{Sender: 1, Seq: 7, Payload: []byte{0, '\n'}})
	p.GroupDeliver(group.DeliverEvent{View: 4, Sender: 3, Inc: 77, Seq: 9, Payload: []byte("c")})
	p.Exit(5)
	p.Flush()
	p.Writer().Close()
	<-p.Writer().done
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"event":"deliver","member":2,"sender":1,"seq":7,"payload":"AAo="`) ||
		!strings.Contains(lines[1], `"event":"deliver","member":2,"view":4,"inc":77,"sender":3,"seq":9,"payload":"Yw=="`) ||
		!strings.Contains(lines[2], `"event":"exit","member":2,"sent":5`) {
		t.Fatalf("json:\n%s", out.String())
	}
}

// fake is a Member whose machine is the test: it records what the pipe
// tells it.
type fake struct {
	mu       sync.Mutex
	written  uint64
	finished bool
}

func (f *fake) Submit(context.Context, [][]byte) error { return nil }
func (f *fake) End(context.Context) error              { return nil }
func (f *fake) Handle(ev node.Event, p *Printer) {
	if e, ok := ev.(mcast.DeliverEvent); ok {
		p.Deliver(e)
	}
	if _, ok := ev.(mcast.DoneEvent); ok {
		f.finished = true
	}
}
func (f *fake) Finished(uint64) bool { return f.finished }
func (f *fake) Written(_ context.Context, c uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.written = c
	return nil
}
func (f *fake) cost() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.written
}

// running is a cli.Running fed by the test.
func running() (*cli.Running, chan node.Event) {
	evs := make(chan node.Event, 16)
	return &cli.Running{Events: evs, Done: make(chan error), Signals: make(chan os.Signal)}, evs
}

// TestPipeTakesEventsWhileStdoutBlocks: with stdout blocked the pipe
// still takes every event the machine emits (the machine is never held
// up by a reader), until --stall-timeout, when it exits 76 saying how
// much it wrote and did not.
func TestPipeTakesEventsWhileStdoutBlocks(t *testing.T) {
	live, evs := running()
	g := newGate()
	defer g.Open()
	p := NewPrinter(g, 3, false, false)
	f := &fake{}
	res := make(chan error, 1)
	stdin, feed := io.Pipe() // input stays open
	defer feed.Close()
	go func() {
		// --stall-timeout must outlast feeding 5,000 events: 300 ms did
		// not at load 40 under -race (866 taken), so give it 5 s.
		res <- Pipe(live, f, stdin, p, PipeConfig{MaxLine: mcast.MaxPayload, Linger: time.Minute, Stall: 5 * time.Second})
	}()
	evs <- mcast.DeliverEvent{Sender: 1, Seq: 1, Payload: []byte("line")}
	<-g.entered // the first write is blocked from here on
	for i := 2; i <= 5000; i++ {
		select {
		case evs <- mcast.DeliverEvent{Sender: 1, Seq: uint64(i), Payload: []byte("line")}:
		case err := <-res:
			t.Fatalf("the pipe ended (%v) after taking %d of 5,000 events", err, i-1)
		case <-time.After(10 * time.Second):
			t.Fatalf("the pipe stopped taking events after %d of 5,000 while stdout was blocked", i-1)
		}
	}
	select {
	case err := <-res:
		var ee *cli.ExitError
		if !errors.As(err, &ee) || ee.Code != cli.ExitLost || !strings.Contains(err.Error(), "stdout blocked") ||
			!strings.Contains(err.Error(), "more not written") {
			t.Fatalf("pipe ended with %v, want exit 76 saying what was not written", err)
		}
		if f.cost() != 0 {
			t.Fatalf("told the machine %d was written, nothing was", f.cost())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pipe did not give up on a stdout blocked past --stall-timeout")
	}
}

// TestPipeReportsWritten: what the writer writes is reported to the
// machine (the room under its Backlog), and a clean end waits for the
// last line to be written.
func TestPipeReportsWritten(t *testing.T) {
	live, evs := running()
	g := newGate()
	p := NewPrinter(g, 3, false, false)
	f := &fake{}
	res := make(chan error, 1)
	go func() {
		res <- Pipe(live, f, strings.NewReader(""), p, PipeConfig{MaxLine: mcast.MaxPayload, Linger: time.Minute})
	}()
	var want uint64
	for i := 1; i <= 100; i++ {
		evs <- mcast.DeliverEvent{Sender: 1, Seq: uint64(i), Payload: []byte("line")}
		want += mcast.Cost([]byte("line"))
	}
	evs <- mcast.DoneEvent{}
	select {
	case err := <-res:
		t.Fatalf("the pipe ended (%v) before its output was written", err)
	case <-time.After(100 * time.Millisecond): // checking that nothing happens
	}
	g.Open()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if strings.Count(g.String(), "\n") != 100 {
		t.Fatalf("%d lines written", strings.Count(g.String(), "\n"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.cost() != want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling a counter the pipe's goroutine sets
	}
	if f.cost() != want {
		t.Fatalf("machine told %d written, want %d", f.cost(), want)
	}
}

// TestPipeLingerIsAnError: --linger running out before the group has
// finished is exit 75 with a message, not a clean exit.
func TestPipeLingerIsAnError(t *testing.T) {
	live, _ := running()
	var out bytes.Buffer
	p := NewPrinter(&out, 3, true, false)
	err := Pipe(live, &fake{}, strings.NewReader("x\n"), p, PipeConfig{MaxLine: mcast.MaxPayload, Linger: 50 * time.Millisecond})
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != cli.ExitBusy || !strings.Contains(err.Error(), "--linger") {
		t.Fatalf("got %v, want exit 75 about --linger", err)
	}
	if strings.Contains(out.String(), `"exit"`) {
		t.Fatal("a member that did not finish logged a clean exit")
	}
}

// member is a real fixed-group member on an in-memory network behind a
// pipe whose stdout is g.
type pipeMember struct {
	m   *mcast.Machine
	drv *driver.Driver[mcast.Msg]
	res chan error
	out *gate
}

func startMember(t *testing.T, net *transport.Network, id node.ID, ids []node.ID, in io.Reader, backlog int) *pipeMember {
	m, err := mcast.New(mcast.Config{ID: id, Peers: ids, Window: 64, Backlog: backlog})
	if err != nil {
		t.Fatal(err)
	}
	fr, _ := wire.NewFramer("test", id, 1, nil)
	drv := driver.New[mcast.Msg](m, mcast.Codec{}, net.Endpoint(id), driver.Config{Framer: fr})
	evs := make(chan node.Event, 1024)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- drv.Run(ctx, func(ev node.Event) { evs <- ev }) }()
	live := &cli.Running{Events: evs, Done: done, Signals: make(chan os.Signal)}
	pm := &pipeMember{m: m, drv: drv, res: make(chan error, 1), out: newGate()}
	go func() {
		pm.res <- Pipe(live, NewMulticast(drv), in, NewPrinter(pm.out, id, false, false), PipeConfig{MaxLine: mcast.MaxPayload, Linger: time.Minute})
	}()
	t.Cleanup(func() { pm.out.Open(); cancel() })
	return pm
}

// refused is how many messages the member's machine refused to store.
func (pm *pipeMember) refused() uint64 {
	var n uint64
	pm.drv.Do(context.Background(), func() { n = pm.m.Stats()["refused"] }) // read on the machine's goroutine
	return n
}

// TestPipeBackPressure: two real members; member 2's reader is stopped.
// Member 2 takes no more than its Backlog, so member 1's input stops
// being read (its sends are refused) instead of piling up anywhere; once
// member 2's reader goes on, both end with every line.
func TestPipeBackPressure(t *testing.T) {
	const lines = 3000
	var in strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&in, "line %04d %s\n", i, strings.Repeat("p", 60))
	}
	net := transport.NewNetwork()
	ids := []node.ID{1, 2}
	backlog := 50 * int(mcast.Cost(make([]byte, 70)))
	m1 := startMember(t, net, 1, ids, strings.NewReader(in.String()), backlog)
	m1.out.Open()
	m2 := startMember(t, net, 2, ids, strings.NewReader(""), backlog)
	<-m2.out.entered
	// Member 2's machine takes its backlog, then refuses what comes.
	deadline := time.Now().Add(20 * time.Second)
	for m2.refused() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("member 2 never refused a message with its reader stopped")
		}
		time.Sleep(5 * time.Millisecond) // polling a counter
	}
	sent := strings.Count(m1.out.String(), "\n")
	if sent >= lines {
		t.Fatalf("member 1 sent all %d lines while member 2's reader was stopped", lines)
	}
	m2.out.Open()
	for _, pm := range []*pipeMember{m1, m2} {
		select {
		case err := <-pm.res:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the members did not finish")
		}
	}
	if got := strings.Count(m2.out.String(), "\n"); got != lines {
		t.Fatalf("member 2 wrote %d of %d lines", got, lines)
	}
	t.Logf("member 1 had sent %d of %d lines while member 2's reader was stopped", sent, lines)
}

// TestPipeBoundsItsQueue: a member without flow control (gossip) that
// delivers faster than stdout takes stops taking events once queueMax of
// output waits, and goes on when the reader does.
func TestPipeBoundsItsQueue(t *testing.T) {
	live, evs := running()
	g := newGate()
	defer g.Open()
	p := NewPrinter(g, 3, false, false)
	res := make(chan error, 1)
	stdin, feed := io.Pipe()
	defer feed.Close()
	go func() {
		res <- Pipe(live, &fake{}, stdin, p, PipeConfig{MaxLine: mcast.MaxPayload, Linger: time.Minute})
	}()
	payload := bytes.Repeat([]byte("z"), 1<<20)
	taken := 0
	for i := 1; i <= 2*queueMax>>20; i++ {
		select {
		case evs <- mcast.DeliverEvent{Sender: 1, Seq: uint64(i), Payload: payload}:
			taken++
			continue
		case <-time.After(2 * time.Second):
			// Stopped: the events channel (16) and the queue are full.
		}
		break
	}
	if taken > queueMax>>20+16+2 || taken < queueMax>>20 {
		t.Fatalf("took %d events of 1 MiB with stdout blocked, queue bound %d MiB", taken, queueMax>>20)
	}
	g.Open()
	select {
	case evs <- mcast.DeliverEvent{Sender: 1, Seq: uint64(taken + 1), Payload: []byte("x")}:
	case <-time.After(10 * time.Second):
		t.Fatal("the pipe did not go on taking events once stdout was read")
	}
}
