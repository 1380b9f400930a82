package termination

import (
	"reflect"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

func TestCodec(t *testing.T) {
	for _, m := range []Msg{
		{Type: MsgWork, Seq: 9},
		{Type: MsgMarker, Seq: 1 << 40, NCrashed: 1, White: []node.ID{2, 3}, Members: []node.ID{4, 5, 6}},
		{Type: MsgDone, Members: []node.ID{4}},
		{Type: MsgMarkerAck, Seq: 7},
		{Type: MsgDoneAck},
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
	if _, _, err := (Codec{}).Marshal(Msg{Type: MsgIdle}); err == nil {
		t.Fatal("a local request must not be encodable")
	}
}

func FuzzCodec(f *testing.F) {
	typ, p, _ := Codec{}.Marshal(Msg{Type: MsgMarker, Seq: 3, NCrashed: 1, Members: []node.ID{1, 2}})
	f.Add(typ, p)
	f.Fuzz(func(t *testing.T, typ uint8, p []byte) {
		if err := wire.RoundTrip[Msg](Codec{}, typ, p); err != nil {
			t.Fatal(err)
		}
	})
}
