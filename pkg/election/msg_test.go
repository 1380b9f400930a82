package election

import (
	"reflect"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

func TestCodecRoundTrip(t *testing.T) {
	for _, m := range []Msg{
		{Type: MsgHeartbeat, Term: 9, Prio: 5, Leader: 5},
		{Type: MsgElection, Term: 3, Prio: 1, Origin: 1, Round: 1 << 40, Members: []Member{{1, 1}, {2, 7}}},
		{Type: MsgAck, Of: MsgCoordinator, Origin: 4, Round: 2},
		{Type: MsgResign, Leader: 4294967295, Term: 1},
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
	if _, _, err := (Codec{}).Marshal(Msg{Type: MsgCampaign}); err == nil {
		t.Fatal("a local request must not be encodable")
	}
}

func FuzzCodec(f *testing.F) {
	typ, p, _ := Codec{}.Marshal(Msg{Type: MsgElection, Term: 3, Members: []Member{{1, 1}, {node.ID(2), 2}}})
	f.Add(typ, p)
	f.Add(uint8(1), []byte{})
	f.Fuzz(func(t *testing.T, typ uint8, p []byte) {
		if err := wire.RoundTrip[Msg](Codec{}, typ, p); err != nil {
			t.Fatal(err)
		}
	})
}
