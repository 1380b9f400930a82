package consensus

import (
	"errors"
	"fmt"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Entry is one value, with its EIG label (empty for FloodSet).
type Entry struct {
	Label []node.ID
	Value string
}

// Msg is one round's message.
type Msg struct {
	Round   uint32
	Entries []Entry
}

// MsgRound is the only message type. Values are part of the wire protocol.
const MsgRound uint8 = 1

const (
	maxValue   = 256
	maxEntries = 8192
	maxLabel   = 64
)

// Codec encodes consensus messages for package wire.
type Codec struct{}

func (Codec) Family() wire.Family { return wire.FamilyConsensus }

func (Codec) Marshal(m Msg) (uint8, []byte, error) {
	if len(m.Entries) > maxEntries {
		return 0, nil, fmt.Errorf("consensus: %d entries exceed %d", len(m.Entries), maxEntries)
	}
	var e wire.Enc
	e.Uvarint(uint64(m.Round))
	e.Uvarint(uint64(len(m.Entries)))
	for _, en := range m.Entries {
		if len(en.Label) > maxLabel || len(en.Value) > maxValue {
			return 0, nil, errors.New("consensus: entry too large")
		}
		e.Uvarint(uint64(len(en.Label)))
		for _, id := range en.Label {
			e.Uvarint(uint64(id))
		}
		e.Bytes([]byte(en.Value))
	}
	return MsgRound, e.B, nil
}

func (Codec) Unmarshal(typ uint8, p []byte) (Msg, error) {
	if typ != MsgRound {
		return Msg{}, fmt.Errorf("%w: consensus message type %d", wire.ErrMalformed, typ)
	}
	d := wire.NewDec(p)
	var m Msg
	r := d.Uvarint()
	if r > 1<<16 {
		d.Fail("round")
	}
	m.Round = uint32(r)
	n := d.Count(maxEntries, 2)
	for i := 0; i < n && d.Err() == nil; i++ {
		var en Entry
		ln := d.Count(maxLabel, 1)
		for j := 0; j < ln; j++ {
			id := d.ID()
			if id == node.None {
				d.Fail("process id")
			}
			en.Label = append(en.Label, id)
		}
		en.Value = string(d.Bytes(maxValue))
		m.Entries = append(m.Entries, en)
	}
	if err := d.Done(); err != nil {
		return Msg{}, err
	}
	return m, nil
}
