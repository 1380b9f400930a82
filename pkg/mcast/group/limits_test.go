package group

import (
	"bytes"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// TestPayloadLimitFits: a message at mcast.MaxPayload fits one sealed
// frame with every header of the group's data frame at its widest
// (pkg/mcast's TestPayloadLimitFitsSealedFrame checks the fixed group).
func TestPayloadLimitFits(t *testing.T) {
	f, err := wire.NewFramer("c", 1, 1<<62, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	typ, p, err := Codec{}.Marshal(Msg{Type: MsgData, View: maxSeq, Inc: ^uint64(0), Ballot: Ballot{maxSeq, node.ID(^uint32(0))},
		Items: []mcast.Item{{Sender: node.ID(^uint32(0)), Seq: maxSeq, TS: maxSeq, Payload: make([]byte, mcast.MaxPayload)}},
		Lead:  Member{node.ID(^uint32(0)), ^uint64(0)}})
	if err != nil {
		t.Fatalf("group: %v", err)
	}
	if _, err := f.Seal(wire.FamilyMcast, typ, 2, p); err != nil {
		t.Fatalf("group: %d-byte payload does not fit a sealed frame: %v", len(p), err)
	}
}

// TestTimerDefaults: the defaults 'mcast run --help' and docs/mcast.md
// give a dynamic group: 20ms and 8 × 20ms.
func TestTimerDefaults(t *testing.T) {
	if g := (Config{}); g.period() != 20*time.Millisecond || g.SuspectTime() != 160*time.Millisecond {
		t.Fatalf("dynamic group: period %v, suspect %v", g.period(), g.SuspectTime())
	}
}
