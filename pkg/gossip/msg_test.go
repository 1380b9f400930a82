package gossip

import (
	"reflect"
	"testing"

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
