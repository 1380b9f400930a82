package mutex

import (
	"reflect"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/election"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

func TestCodecRoundTrip(t *testing.T) {
	for _, m := range []Msg{
		{Type: MsgElection, Elect: election.Msg{Type: election.MsgHeartbeat, Term: 9, Prio: 3, Leader: 3}},
		{Type: MsgAcquire, Term: 4, Seq: 9, Name: "db", Client: 12, NonBlock: true, Attempt: 3},
		{Type: MsgPing, Term: 4, Seq: 1, Locks: []LockRec{{Name: "db", Node: 2, Client: 1, Token: 77, Attempt: 5}}},
		{Type: MsgTRToken, Term: 41, Members: []Member{{ID: 3, Boot: 1 << 60}, {ID: 1, Boot: 7}}},
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
	if _, _, err := (Codec{}).Marshal(Msg{Type: LocalAcquire}); err == nil {
		t.Fatal("a local request must not be encodable")
	}
}

func FuzzCodec(f *testing.F) {
	_, p, _ := Codec{}.Marshal(Msg{Type: MsgReport, Term: 2, Locks: []LockRec{{Name: "a", Node: 1, Token: 3}}})
	f.Add(uint8(MsgReport), p)
	_, p, _ = Codec{}.Marshal(Msg{Type: MsgElection, Elect: election.Msg{Type: election.MsgElection, Term: 1}})
	f.Add(uint8(election.MsgElection), p)
	_, p, _ = Codec{}.Marshal(Msg{Type: MsgTRToken, Term: 9, Members: []Member{{ID: 2, Boot: 5}}})
	f.Add(uint8(MsgTRToken), p)
	f.Fuzz(func(t *testing.T, typ uint8, p []byte) {
		if err := wire.RoundTrip[Msg](Codec{}, typ, p); err != nil {
			t.Fatal(err)
		}
	})
}

// TestBoundedNumbers: a message whose term or token could make a fencing
// token wrap is malformed, whoever sent it (a forged grant with term 2^33
// once made tokens fall below the first one).
func TestBoundedNumbers(t *testing.T) {
	for _, m := range []Msg{
		{Type: MsgPing, Term: 1 << 33},
		{Type: MsgGrant, Term: 2, Token: 1<<63 + 1, Name: "x"},
		{Type: MsgRARequest, Term: node.MaxTerm + 1, Name: "x"},
		{Type: MsgTRToken, Term: 1<<62 + 1},
		{Type: MsgReport, Term: 2, Locks: []LockRec{{Name: "x", Node: 1, Token: 1<<63 + 1}}},
	} {
		typ, body, err := Codec{}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (Codec{}).Unmarshal(typ, body); err == nil {
			t.Errorf("%v with term %d, token %d accepted", m.Type, m.Term, m.Token)
		}
	}
	typ, body, _ := Codec{}.Marshal(Msg{Type: MsgTRToken, Term: 1 << 40})
	if _, err := (Codec{}).Unmarshal(typ, body); err != nil {
		t.Errorf("a token ring count of 2^40 refused: %v", err)
	}
}
