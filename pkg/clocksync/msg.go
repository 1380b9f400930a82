package clocksync

import (
	"fmt"
	"time"

	"github.com/roundtable-go/roundtable/pkg/election"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Berkeley message types (wire family clock). Below 32: the embedded
// election's. Append only.
const (
	BerkeleyPoll    uint8 = 32 // master → all: what time is it? (Seq)
	BerkeleyReading uint8 = 33 // → master: my clock read Time when your poll Seq arrived
	BerkeleyAdjust  uint8 = 34 // master → node: adjust your clock by Delta
)

// BerkeleyMsg is one Berkeley message.
type BerkeleyMsg struct {
	Type  uint8
	Elect election.Msg // Type < 32
	Seq   uint64
	Time  time.Time     // Reading
	Delta time.Duration // Adjust
}

// BerkeleyCodec encodes Berkeley messages.
type BerkeleyCodec struct{}

func (BerkeleyCodec) Family() wire.Family { return wire.FamilyClock }

func (BerkeleyCodec) Marshal(m BerkeleyMsg) (uint8, []byte, error) {
	if m.Type < 32 {
		return election.Codec{}.Marshal(m.Elect)
	}
	if m.Type > BerkeleyAdjust {
		return 0, nil, fmt.Errorf("clocksync: berkeley message type %d", m.Type)
	}
	var e wire.Enc
	e.Uvarint(m.Seq)
	e.Varint(m.Time.UnixNano())
	e.Varint(int64(m.Delta))
	return m.Type, e.B, nil
}

func (BerkeleyCodec) Unmarshal(typ uint8, p []byte) (BerkeleyMsg, error) {
	if typ < 32 {
		em, err := election.Codec{}.Unmarshal(typ, p)
		return BerkeleyMsg{Type: typ, Elect: em}, err
	}
	if typ > BerkeleyAdjust {
		return BerkeleyMsg{}, fmt.Errorf("%w: berkeley message type %d", wire.ErrMalformed, typ)
	}
	d := wire.NewDec(p)
	m := BerkeleyMsg{Type: typ, Seq: d.Uvarint()}
	m.Time = time.Unix(0, d.Varint())
	m.Delta = time.Duration(d.Varint())
	if err := d.Done(); err != nil {
		return BerkeleyMsg{}, err
	}
	return m, nil
}
