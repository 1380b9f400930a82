package gossip

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

func TestCodecRoundTrip(t *testing.T) {
	c := Codec{Fam: wire.FamilyMcast}
	for _, m := range []Msg{
		{Type: MsgPush, Events: []Event{{Origin: 3, Seq: 1, TTL: 4, Payload: []byte("hello")}, {Origin: 9, Seq: 1 << 40, Payload: []byte{}}}},
		{Type: MsgDigest, Digest: []Have{{1, 5}, {4294967295, 1}}},
		{Type: MsgRepair, Events: []Event{{Origin: 2, Seq: 7, Payload: []byte{0, 1, 2}}}},
	} {
		typ, p, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Unmarshal(typ, p)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("%+v -> %+v, %v", m, got, err)
		}
	}
	if _, _, err := c.Marshal(Msg{Type: MsgBroadcast}); err == nil {
		t.Fatal("a local request must not be encodable")
	}
	for _, m := range []Msg{{Type: MsgPush, Events: []Event{{Origin: 0, Seq: 1}}}, {Type: MsgPush, Events: []Event{{Origin: 1, Seq: 0}}}} {
		typ, p, _ := c.Marshal(m)
		if _, err := c.Unmarshal(typ, p); err == nil {
			t.Fatalf("%+v decoded", m)
		}
	}
}

func FuzzCodec(f *testing.F) {
	c := Codec{Fam: wire.FamilyMcast}
	typ, p, _ := c.Marshal(Msg{Type: MsgPush, Events: []Event{{Origin: 3, Seq: 1, TTL: 4, Payload: []byte("x")}}, Digest: []Have{{1, 2}}})
	f.Add(typ, p)
	f.Add(uint8(2), []byte{})
	f.Fuzz(func(t *testing.T, typ uint8, p []byte) {
		if err := wire.RoundTrip[Msg](c, typ, p); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSetPeers: a group that changes: a newcomer's push is taken once it
// is in the group, and one from a process that left is refused.
func TestSetPeers(t *testing.T) {
	m, err := New(Config{ID: 1, Peers: []node.ID{1, 2}, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	push := func(from node.ID, seq uint64) error {
		return m.Step(time.Unix(0, 0), node.Envelope[Msg]{From: from, To: 1, Msg: Msg{Type: MsgPush, Events: []Event{{Origin: from, Seq: seq, TTL: 3, Payload: []byte("x")}}}})
	}
	if push(3, 1) == nil {
		t.Fatal("a push from 3, not in the group, was taken")
	}
	m.SetPeers([]node.ID{1, 3, 3, node.None})
	if err := push(3, 1); err != nil {
		t.Fatalf("3 joined the group, its push was refused: %v", err)
	}
	if push(2, 1) == nil {
		t.Fatal("2 left the group, its push was taken")
	}
	if got := m.Ready().Events; len(got) != 1 {
		t.Fatalf("delivered %v, want 3's one event", got)
	}
	if !slices.Equal(m.peers, []node.ID{3}) {
		t.Fatalf("peers %v, want [3]", m.peers)
	}
}
