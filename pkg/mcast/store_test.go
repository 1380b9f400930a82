package mcast

import (
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestSeqStore: a sender's messages by sequence number: held from base
// on, looked up by index, dropped as a prefix (their payloads with them),
// and a seq below what was dropped is not held again.
func TestSeqStore(t *testing.T) {
	st := newSeqStore()
	for _, q := range []uint64{1, 2, 5} {
		if !st.put(Item{Seq: q, Payload: []byte{byte(q)}}) {
			t.Fatalf("put %d refused", q)
		}
	}
	for q, want := range map[uint64]bool{0: false, 1: true, 2: true, 3: false, 4: false, 5: true, 6: false} {
		if it, ok := st.get(q); ok != want || ok && it.Seq != q {
			t.Errorf("get(%d) = %v, %v; want held %v", q, it, ok, want)
		}
	}
	if n := st.drop(3); n != 2 {
		t.Errorf("drop(3) dropped %d held, want 2", n)
	}
	if st.at(1) != nil || st.at(5) == nil || st.put(Item{Seq: 2}) || st.at(2) != nil {
		t.Errorf("after drop(3): 1 held %v, 5 held %v, 2 held again %v", st.at(1) != nil, st.at(5) != nil, st.at(2) != nil)
	}
	if n := st.drop(9); n != 1 || st.base != 10 || len(st.slots) != 0 {
		t.Errorf("drop(9): %d dropped, base %d, %d slots; want 1, 10, 0", n, st.base, len(st.slots))
	}
}

// TestFarAheadNotStored: a data frame naming a position further ahead of
// what this member received than any sender goes (aheadMax: a forged
// frame, or one sent to a member the sender suspected) is counted and
// not stored, so it grows no store; the same sender's next message in
// order is stored and delivered as usual.
func TestFarAheadNotStored(t *testing.T) {
	m, err := New(Config{ID: 1, Peers: []node.ID{1, 2, 3}, Order: FIFO})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	m.Tick(now)
	data := func(seq uint64) node.Envelope[Msg] {
		return node.Envelope[Msg]{From: 2, To: 1, Msg: Msg{Type: MsgData, Items: []Item{{Sender: 2, Seq: seq, Payload: []byte("x")}}}}
	}
	for _, seq := range []uint64{1 << 62, 1 + m.aheadMax()} {
		if err := m.Step(now, data(seq)); err != nil {
			t.Fatal(err)
		}
	}
	if s := m.store[m.idx[2]]; m.held != 0 || len(s.slots) != 0 || m.stats["ahead"] != 2 {
		t.Fatalf("far-ahead frames: held %d, %d slots, ahead %d; want 0, 0, 2", m.held, len(s.slots), m.stats["ahead"])
	}
	if err := m.Step(now, data(m.aheadMax())); err != nil {
		t.Fatal(err)
	}
	if err := m.Step(now, data(1)); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for _, ev := range m.Ready().Events {
		if d, ok := ev.(DeliverEvent); ok {
			got = append(got, d.Seq)
		}
	}
	if m.held != 2 || len(got) != 1 || got[0] != 1 {
		t.Errorf("held %d (want 2: 1 and aheadMax), delivered %v (want [1])", m.held, got)
	}
}
