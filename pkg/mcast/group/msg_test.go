package group

import (
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"reflect"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

func TestCodecRoundTrip(t *testing.T) {
	change := &Change{Next: View{ID: 8, Members: []Member{{2, 7}, {3, 1 << 40}}, Joined: []Member{{3, 1 << 40}}, Left: []Member{{1, 5}}},
		Survivors: []node.ID{1, 2}, Cut: []uint64{4, 0, 9}, OrderCut: 11}
	for _, m := range []Msg{
		{Type: MsgData, View: 7, Inc: 99, Items: []mcast.Item{{Sender: 3, Seq: 1, Payload: []byte("hello")}, {Sender: 9, Seq: 1 << 40, Payload: []byte{}}}},
		{Type: MsgOrder, View: 7, Start: 5, Stamps: []Stamp{{3, 1}, {9, 2}}},
		{Type: MsgStatus, View: 7, Recv: []uint64{1, 2, 3}, Ordered: 4},
		{Type: MsgJoin, Member: Member{4, 1 << 33}},
		{Type: MsgAck, View: 7, Ballot: Ballot{3, 2}, Recv: []uint64{1}, Change: change, Accepted: Ballot{2, 1}},
		{Type: MsgAck, View: 7, Ballot: Ballot{5, 4}, Reject: true},
		{Type: MsgInstall, View: 7, Change: change},
		{Type: MsgGone, View: 9},
		{Type: MsgGone, View: 9, Inc: 3, Member: Member{4, 1 << 33}},
		{Type: MsgStatus, View: 7, Recv: []uint64{1, 2}, Lead: Member{2, 1 << 40}}, // a view's leader (Msg.Lead)
		{Type: MsgHoldCancel, View: 7, Inc: 3, Lead: Member{1, 2}},                 // TOTEM's token hold cancel
	} {
		typ, p, err := Codec{}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Codec{}.Unmarshal(typ, p)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("%+v -> %+v, %v", m, got, err)
		}
	}
	if _, _, err := (Codec{}).Marshal(Msg{Type: MsgSend}); err == nil {
		t.Fatal("a local request must not be encodable")
	}
	if _, err := (Codec{}).Unmarshal(uint8(maxWire+1), nil); err == nil {
		t.Fatal("a type past the last wire message must not decode")
	}
	for _, m := range []Msg{{Type: MsgData, Items: []mcast.Item{{Sender: 0, Seq: 1}}}, {Type: MsgData, Items: []mcast.Item{{Sender: 1, Seq: 0}}},
		{Type: MsgStatus, Recv: []uint64{maxSeq + 1}}, {Type: MsgOrder, Stamps: []Stamp{{0, 1}}},
		{Type: MsgCommit, Change: &Change{Next: View{Members: []Member{{0, 1}}}}}} {
		typ, p, _ := Codec{}.Marshal(m)
		if _, err := (Codec{}).Unmarshal(typ, p); err == nil {
			t.Fatalf("%+v decoded", m)
		}
	}
}

func FuzzCodec(f *testing.F) {
	for _, m := range []Msg{
		{Type: MsgData, View: 2, Items: []mcast.Item{{Sender: 3, Seq: 1, Payload: []byte("x")}}},
		{Type: MsgCommit, View: 2, Ballot: Ballot{1, 1}, Change: &Change{Next: View{ID: 3, Members: []Member{{1, 2}}}, Survivors: []node.ID{1}, Cut: []uint64{1}}},
		{Type: MsgGone, View: 5, Inc: 2, Member: Member{3, 7}},
		{Type: MsgHoldCancel, View: 5, Inc: 2, Lead: Member{1, 4}},
	} {
		typ, p, _ := Codec{}.Marshal(m)
		f.Add(typ, p)
	}
	f.Add(uint8(18), []byte{})
	f.Add(uint8(MsgHoldCancel), []byte{5})      // cut short
	f.Add(uint8(MsgHoldCancel+1), []byte{5, 2}) // no such type
	f.Fuzz(func(t *testing.T, typ uint8, p []byte) {
		if err := wire.RoundTrip[Msg](Codec{}, typ, p); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkMarshalData: a data frame of one message and of a flood's 40,
// 84-byte payloads each (mcast bench's 64 bytes and its header). The
// encoder is sized once for the frame: grown by appending it took 10
// allocations and 11 KB for 40 messages (1 and 4.9 KB now, about half the
// time).
func BenchmarkMarshalData(b *testing.B) {
	for _, n := range []int{1, 40} {
		items := make([]mcast.Item, n)
		for i := range items {
			items[i] = mcast.Item{Sender: 3, Seq: uint64(1000 + i), Payload: make([]byte, 84)}
		}
		m := Msg{Type: MsgData, View: 7, Inc: 1, Items: items}
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := (Codec{}).Marshal(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
