package mcast

import (
	"reflect"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/wire"
)

func TestCodecRoundTrip(t *testing.T) {
	for _, m := range []Msg{
		{Type: MsgData, Items: []Item{{Sender: 3, Seq: 1, Payload: []byte("hello")}, {Sender: 9, Seq: 1 << 40, VT: []uint64{1, 0, 7}, Payload: []byte{}}}},
		{Type: MsgDigest, Recv: []uint64{1, 2, 3}, Deliv: []uint64{1, 2, 2}, High: []uint64{1, 4, 3}, Final: 9},
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
	for _, m := range []Msg{{Type: MsgData, Items: []Item{{Sender: 0, Seq: 1}}}, {Type: MsgData, Items: []Item{{Sender: 1, Seq: 0}}},
		{Type: MsgDigest, Recv: []uint64{maxSeq + 1}}} {
		typ, p, _ := Codec{}.Marshal(m)
		if _, err := (Codec{}).Unmarshal(typ, p); err == nil {
			t.Fatalf("%+v decoded", m)
		}
	}
}

func FuzzCodec(f *testing.F) {
	typ, p, _ := Codec{}.Marshal(Msg{Type: MsgData, Items: []Item{{Sender: 3, Seq: 1, VT: []uint64{1, 2}, Payload: []byte("x")}}})
	f.Add(typ, p)
	f.Add(uint8(2), []byte{})
	f.Fuzz(func(t *testing.T, typ uint8, p []byte) {
		if err := wire.RoundTrip[Msg](Codec{}, typ, p); err != nil {
			t.Fatal(err)
		}
	})
}
