package consensus

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

func TestCodecRoundTrip(t *testing.T) {
	m := Msg{Round: 3, Entries: []Entry{{Value: "7"}, {Label: []node.ID{1, 4}, Value: "attack"}}}
	typ, p, err := Codec{}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Codec{}.Unmarshal(typ, p)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("%+v -> %+v %v", m, got, err)
	}
}

func TestSignedCodecRoundTrip(t *testing.T) {
	m := Msg{Round: 2, Signed: []SignedEntry{{Value: "attack", Chain: []Sig{{ID: 1, Sig: make([]byte, 64)}, {ID: 3, Sig: make([]byte, 64)}}}}}
	typ, p, err := Codec{}.Marshal(m)
	if err != nil || typ != MsgSigned {
		t.Fatal(typ, err)
	}
	got, err := Codec{}.Unmarshal(typ, p)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("%+v -> %+v %v", m, got, err)
	}
}

func TestHelloCodecRoundTrip(t *testing.T) {
	for _, m := range []Msg{{Hello: true}, {Hello: true, Ready: true}} {
		typ, p, err := Codec{}.Marshal(m)
		if err != nil || typ != MsgHello {
			t.Fatal(typ, err)
		}
		got, err := Codec{}.Unmarshal(typ, p)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("%+v -> %+v %v", m, got, err)
		}
	}
	if _, err := (Codec{}).Unmarshal(MsgHello, []byte{2}); err == nil {
		t.Fatal("a hello with unknown flags decoded")
	}
}

func FuzzCodec(f *testing.F) {
	_, p, _ := Codec{}.Marshal(Msg{Round: 2, Entries: []Entry{{Label: []node.ID{3}, Value: "x"}}})
	f.Add(MsgRound, p)
	f.Add(uint8(9), []byte{1})
	_, p2, _ := Codec{}.Marshal(Msg{Round: 2, Signed: []SignedEntry{{Value: "x", Chain: []Sig{{ID: 3, Sig: make([]byte, 64)}, {ID: 2, Sig: []byte{1}}}}}})
	f.Add(MsgSigned, p2)
	f.Add(MsgHello, []byte{1})
	priv, pub := testKeys(rand.New(rand.NewPCG(1, 2)), []node.ID{1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, typ uint8, p []byte) {
		if err := wire.RoundTrip[Msg](Codec{}, typ, p); err != nil {
			t.Fatal(err)
		}
		m, err := Codec{}.Unmarshal(typ, p)
		if err != nil {
			return
		}
		// Whatever decodes must be safe to hand to a machine.
		for _, algo := range []Algo{EIG, Signed, FloodSet} {
			start := time.Unix(0, 0)
			if algo == FloodSet {
				start = time.Time{} // the start barrier
			}
			mc, err := New(Config{ID: 1, Peers: []node.ID{1, 2, 3, 4}, Algo: algo, F: 1, Value: "v", Start: start,
				Key: priv[1], Keys: pub})
			if err != nil {
				t.Fatal(err)
			}
			mc.Tick(time.Unix(0, 0))
			_ = mc.Step(time.Unix(0, 1), node.Envelope[Msg]{From: 2, To: 1, Msg: m})
			mc.Tick(time.Unix(10, 0))
			mc.Ready()
		}
	})
}
