package mcast

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// TestPayloadLimitFitsSealedFrame: a message at the limit fits one sealed
// frame with every header at its widest, in the fixed group (causal order
// with the most members included; pkg/mcast/group's TestPayloadLimitFits
// checks the dynamic group).
func TestPayloadLimitFitsSealedFrame(t *testing.T) {
	f, err := wire.NewFramer("c", 1, 1<<62, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	seal := func(what string, typ uint8, p []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if _, err := f.Seal(wire.FamilyMcast, typ, 2, p); err != nil {
			t.Fatalf("%s: %d-byte payload does not fit a sealed frame: %v", what, len(p), err)
		}
	}
	for _, o := range []Order{Unordered, FIFO, Causal} {
		it := Item{Sender: node.ID(^uint32(0)), Seq: maxSeq, Payload: make([]byte, PayloadLimit(o, maxMembers))}
		if o == Causal {
			it.VT = make([]uint64, maxMembers)
			for i := range it.VT {
				it.VT[i] = maxSeq
			}
		}
		typ, p, err := Codec{}.Marshal(Msg{Type: MsgData, Items: []Item{it}})
		seal(o.String(), typ, p, err)
	}
	// The figures docs/mcast.md gives.
	if MaxPayload != 61248 || PayloadLimit(FIFO, 3) != 61248 || PayloadLimit(Causal, 3) != 61221 {
		t.Fatalf("limits %d, %d", PayloadLimit(FIFO, 3), PayloadLimit(Causal, 3))
	}
}

// pair runs two fixed-group members on a loss-free link through the real
// codec, by hand: what each sends reaches the other at the next step.
type pair struct {
	t   *testing.T
	m   map[node.ID]*Machine
	now time.Time
	evs map[node.ID][]node.Event
	// reads: the member's runner writes out at once whatever it is handed
	reads map[node.ID]bool
}

func newPair(t *testing.T, order Order, backlog int) *pair {
	p := &pair{t: t, m: map[node.ID]*Machine{}, now: time.Unix(1000, 0), evs: map[node.ID][]node.Event{}, reads: map[node.ID]bool{1: true}}
	for _, id := range []node.ID{1, 2} {
		m, err := New(Config{ID: id, Peers: []node.ID{1, 2}, Order: order, Window: 16, Backlog: backlog})
		if err != nil {
			t.Fatal(err)
		}
		m.Tick(p.now)
		p.m[id] = m
	}
	return p
}

// run moves time on by d in steps of 5 ms, ticking and routing.
func (p *pair) run(d time.Duration) {
	for end := p.now.Add(d); p.now.Before(end); p.now = p.now.Add(5 * time.Millisecond) {
		for round := 0; round < 8; round++ {
			moved := false
			for _, id := range []node.ID{1, 2} {
				r := p.m[id].Ready()
				p.evs[id] = append(p.evs[id], r.Events...)
				for _, env := range r.Msgs {
					typ, b, err := Codec{}.Marshal(env.Msg)
					if err != nil {
						p.t.Fatal(err)
					}
					msg, err := Codec{}.Unmarshal(typ, b)
					if err != nil {
						p.t.Fatal(err)
					}
					if err := p.m[env.To].Step(p.now, node.Envelope[Msg]{From: env.From, To: env.To, Msg: msg}); err != nil {
						p.t.Fatal(err)
					}
					moved = true
				}
			}
			if !moved {
				break
			}
		}
		for _, id := range []node.ID{1, 2} {
			p.m[id].Tick(p.now)
			if p.reads[id] {
				c, _ := cost(p.evs[id])
				if err := p.m[id].Step(p.now, node.Envelope[Msg]{From: id, To: id, Msg: Msg{Type: MsgWritten, Written: c}}); err != nil {
					p.t.Fatal(err)
				}
			}
		}
	}
}

// cost sums what the events handed to the runner count against Backlog.
func cost(evs []node.Event) (c uint64, delivered int) {
	for _, ev := range evs {
		switch e := ev.(type) {
		case DeliverEvent:
			c += Cost(e.Payload)
			delivered++
		case SendEvent:
			c += Cost(e.Payload)
		}
	}
	return c, delivered
}

// TestBacklogPushesBack: a member whose runner writes nothing delivers no
// more than its Backlog, stores nothing new (so it acknowledges nothing
// new) and the sender's sends are refused: the group waits for the
// reader, without anybody suspecting anybody. Once the runner writes,
// everything arrives, in order.
func TestBacklogPushesBack(t *testing.T) {
	for _, order := range []Order{FIFO, Causal, Unordered} {
		t.Run(order.String(), func(t *testing.T) {
			const payload, backlog = 100, 10 * (100 + 32)
			p := newPair(t, order, backlog)
			sent, refused := 0, 0
			for i := 0; i < 400 && refused == 0; i++ {
				err := p.m[1].Step(p.now, node.Envelope[Msg]{From: 1, To: 1, Msg: Msg{Type: MsgSend, Items: []Item{{Payload: bytes.Repeat([]byte{'a' + byte(i%26)}, payload)}}}})
				switch {
				case errors.Is(err, ErrFull):
					refused++
				case err != nil:
					t.Fatal(err)
				default:
					sent++
				}
				p.run(10 * time.Millisecond)
			}
			if refused == 0 {
				t.Fatalf("%d sends, none refused: no back-pressure from a reader that writes nothing", sent)
			}
			p.run(3 * time.Second) // long past Suspect (1 s): the digests go on
			c, got := cost(p.evs[2])
			if c > backlog+Cost(make([]byte, payload)) || got == 0 {
				t.Fatalf("member 2 was handed %d deliveries costing %d, backlog %d", got, c, backlog)
			}
			if p.m[1].suspected(p.m[1].idx[2], p.now) || p.m[2].suspected(p.m[2].idx[1], p.now) {
				t.Fatal("a member that waits for its reader is suspected")
			}
			if p.m[2].stats["refused"] == 0 {
				t.Fatal("member 2 stored what it could not deliver")
			}
			// The reader catches up.
			p.reads[2] = true
			for i := 0; i < 400 && sent < 400; i++ {
				// The sender is told there is room and goes on.
				err := p.m[1].Step(p.now, node.Envelope[Msg]{From: 1, To: 1, Msg: Msg{Type: MsgSend, Items: []Item{{Payload: []byte("more")}}}})
				if err == nil {
					sent++
				} else if !errors.Is(err, ErrFull) {
					t.Fatal(err)
				}
				p.run(10 * time.Millisecond)
			}
			p.run(time.Second)
			_, got = cost(p.evs[2])
			if got != sent {
				t.Fatalf("member 2 delivered %d of %d after catching up", got, sent)
			}
			seq := uint64(0)
			for _, ev := range p.evs[2] {
				if e, ok := ev.(DeliverEvent); ok && order != Unordered {
					if e.Seq != seq+1 {
						t.Fatalf("delivered %d after %d", e.Seq, seq)
					}
					seq = e.Seq
				}
			}
			var rooms int
			for _, ev := range p.evs[1] {
				if _, ok := ev.(RoomEvent); ok {
					rooms++
				}
			}
			if rooms == 0 {
				t.Fatal("the refused sender was never told there is room")
			}
		})
	}
}

// TestBacklogOffByDefault: without a Backlog a runner need not report.
func TestBacklogOffByDefault(t *testing.T) {
	p := newPair(t, FIFO, 0)
	for i := 0; i < 50; i++ {
		if err := p.m[1].Step(p.now, node.Envelope[Msg]{From: 1, To: 1, Msg: Msg{Type: MsgSend, Items: []Item{{Payload: []byte(fmt.Sprint(i))}}}}); err != nil {
			t.Fatal(err)
		}
		p.run(10 * time.Millisecond)
	}
	if _, got := cost(p.evs[2]); got != 50 {
		t.Fatalf("delivered %d of 50", got)
	}
}

// TestTimerDefaults: the defaults 'mcast run --help' and docs/mcast.md
// give: 50ms and 20 × 50ms in a fixed group (pkg/mcast/group's
// TestTimerDefaults: 20ms and 8 × 20ms in a dynamic one).
func TestTimerDefaults(t *testing.T) {
	m, err := New(Config{ID: 1, Peers: []node.ID{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if m.cfg.Period != 50*time.Millisecond || m.cfg.Suspect != time.Second {
		t.Fatalf("fixed group: period %v, suspect %v", m.cfg.Period, m.cfg.Suspect)
	}
}
