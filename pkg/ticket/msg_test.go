package ticket

import (
	"reflect"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/gossip"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

func TestCodecRoundTrip(t *testing.T) {
	for _, m := range []Msg{
		{Type: MsgCJoin, Attempt: 1 << 40, Ticket: NoTicket},
		{Type: MsgAckCJoin, Attempt: 7, Ticket: 3, Succ: 9, SuccTicket: 1, N: 8,
			View: []Owner{{3, 4}, {7, 1}}, Epochs: []Epoch{{3, 2}, {2, 1}}},
		{Type: MsgReject, Attempt: 7, N: 8, Succ: 4294967295},
		{Type: MsgNewSucc},
		{Type: MsgCLeave, Ticket: 4, Succ: 2, SuccTicket: 0, N: 5, Epochs: []Epoch{{4, 9}}},
		{Type: MsgAlive},
		{Type: MsgAlive, Ticket: 3, Stretch: 2, Stamp: 1767225600682724009, Echo: 1767225600582724009},
		{Type: MsgAlive, Ticket: 3, Place: 7},
		{Type: MsgAlive, Ticket: 3, Place: NoTicket, Stamp: 5},
		{Type: MsgAckUpdate, Succs: []Owner{{4, 2}}, Stamp: 1 << 60},
		{Type: MsgUpdate, Preds: []Owner{{5, 2}, {7, 3}, {1, 9}}},
		{Type: MsgAckUpdate, Succs: []Owner{{4, 2}, {3, 3}}, Floor: 1 << 33},
		{Type: MsgReqCoord, Attempt: 3, Ticket: 6, SuccTicket: 2},
		{Type: MsgPing, Attempt: 1<<63 | 1, Ticket: 5, Stamp: 9},
		{Type: MsgPong, Attempt: 1<<63 | 1, Ticket: 5},
		{Type: MsgFree, N: 8, Ticket: 6},
		{Type: MsgPrCast, Gossip: &gossip.Msg{Type: gossip.MsgPush, Events: []gossip.Event{{Origin: 2, Seq: 1, TTL: 3, Payload: []byte(`{"event":"taken"}`)}}}},
		{Type: MsgPrCast, Gossip: &gossip.Msg{Type: gossip.MsgDigest, Digest: []gossip.Have{{Origin: 2, Next: 5}}}},
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
	for _, m := range []Msg{{Type: MsgJoin}, {Type: MsgAnnounce, Notice: &Notice{Event: "taken"}}, {Type: MsgGroup}, {Type: MsgPrCast}} {
		if _, _, err := (Codec{}).Marshal(m); err == nil {
			t.Fatalf("%v must not be encodable", m.Type)
		}
	}
	// A frame from before the vouch stamps (nothing after Stretch)
	// decodes with neither, and an ALIVE without its sender's place; one
	// with half a stamp block does not.
	typ, p, _ := Codec{}.Marshal(Msg{Type: MsgAlive, Ticket: 3, Stretch: 1, Place: NoTicket})
	if got, err := (Codec{}).Unmarshal(typ, p); err != nil || got.Stamp != 0 || got.Echo != 0 || got.Place != NoTicket {
		t.Fatalf("an unstamped frame decoded as %+v, %v", got, err)
	}
	// A stamped ALIVE from before the place decodes without it; the
	// place is read on ALIVE only.
	typ, p2, _ := Codec{}.Marshal(Msg{Type: MsgAlive, Ticket: 3, Stamp: 9, Place: NoTicket})
	if got, err := (Codec{}).Unmarshal(typ, p2); err != nil || got.Stamp != 9 || got.Place != NoTicket {
		t.Fatalf("a stamped ALIVE without a place decoded as %+v, %v", got, err)
	}
	if typ, p, _ := (Codec{}).Marshal(Msg{Type: MsgUpdate, Stamp: 9, Place: 7}); len(p) != len(p2) {
		t.Fatalf("an UPDATE carried a place: %d bytes, want %d", len(p), len(p2))
	} else if got, err := (Codec{}).Unmarshal(typ, append(p, 7)); err == nil {
		t.Fatalf("an UPDATE with a trailing place decoded as %+v", got)
	}
	if _, err := (Codec{}).Unmarshal(typ, append(p, 0x85)); err == nil {
		t.Fatal("a truncated stamp decoded")
	}
	if _, err := (Codec{}).Unmarshal(uint8(MsgPrCast), nil); err == nil {
		t.Fatal("an empty prcast decoded")
	}
	for _, m := range []Msg{{Type: MsgAckCJoin, N: MaxTickets + 1}, {Type: MsgCLeave, Epochs: []Epoch{{1, maxEpoch + 1}}},
		{Type: MsgAckUpdate, Floor: maxEpoch + 1}, {Type: MsgUpdate, Preds: make([]Owner, MaxList+1)}} {
		typ, p, err := Codec{}.Marshal(m)
		if err != nil {
			continue // refused on the way out too
		}
		if _, err := (Codec{}).Unmarshal(typ, p); err == nil {
			t.Fatalf("%+v decoded: bounds not checked", m)
		}
	}
}

func FuzzCodec(f *testing.F) {
	typ, p, _ := Codec{}.Marshal(Msg{Type: MsgAckCJoin, Ticket: 3, N: 8, View: []Owner{{3, 4}}, Epochs: []Epoch{{3, 2}}})
	f.Add(typ, p)
	f.Add(uint8(6), []byte{})
	typ, p, _ = Codec{}.Marshal(Msg{Type: MsgAlive, Ticket: 3, Stretch: 1, Stamp: 1 << 60, Echo: 1<<60 - 1})
	f.Add(typ, p)
	typ, p, _ = Codec{}.Marshal(Msg{Type: MsgAlive, Ticket: 3, Place: 9, Stamp: 1 << 60, Echo: 1<<60 - 1})
	f.Add(typ, p)
	typ, p, _ = Codec{}.Marshal(Msg{Type: MsgPing, Attempt: 1<<63 | 1, Ticket: 5})
	f.Add(typ, p)
	f.Fuzz(func(t *testing.T, typ uint8, p []byte) {
		if err := wire.RoundTrip[Msg](Codec{}, typ, p); err != nil {
			t.Fatal(err)
		}
	})
}
