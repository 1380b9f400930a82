package consensus

import (
	"errors"
	"fmt"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Entry is one value, with its EIG label (empty for FloodSet).
type Entry struct {
	Label []node.ID
	Value string
}

// Msg is one round's message: Entries (FloodSet, EIG) or Signed; or, with
// Hello, the start barrier's announcement (no round).
type Msg struct {
	Round   uint32
	Entries []Entry
	Signed  []SignedEntry

	Hello bool // the start barrier: "I am up"
	Ready bool // Hello: the sender's Wait is over; it would start with n−f
}

// Message types. Values are part of the wire protocol.
const (
	MsgRound  uint8 = 1 // FloodSet and EIG: Entries
	MsgSigned uint8 = 2 // signed messages: Signed
	MsgHello  uint8 = 3 // the start barrier: Hello, Ready
)

const (
	maxValue   = 256
	maxEntries = 8192
	maxLabel   = 64
)

// Codec encodes consensus messages for package wire.
type Codec struct{}

func (Codec) Family() wire.Family { return wire.FamilyConsensus }

func (Codec) Marshal(m Msg) (uint8, []byte, error) {
	if m.Hello {
		var flags byte
		if m.Ready {
			flags = 1
		}
		return MsgHello, []byte{flags}, nil
	}
	if len(m.Signed) > 0 || m.Entries == nil && m.Signed != nil {
		return marshalSigned(m)
	}
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
	if typ == MsgSigned {
		return unmarshalSigned(p)
	}
	if typ == MsgHello {
		if len(p) != 1 || p[0] > 1 {
			return Msg{}, fmt.Errorf("%w: consensus hello of %d bytes", wire.ErrMalformed, len(p))
		}
		return Msg{Hello: true, Ready: p[0] == 1}, nil
	}
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

func marshalSigned(m Msg) (uint8, []byte, error) {
	if len(m.Signed) > maxEntries {
		return 0, nil, fmt.Errorf("consensus: %d entries exceed %d", len(m.Signed), maxEntries)
	}
	var e wire.Enc
	e.Uvarint(uint64(m.Round))
	e.Uvarint(uint64(len(m.Signed)))
	for _, en := range m.Signed {
		if len(en.Chain) > maxLabel || len(en.Value) > maxValue {
			return 0, nil, errors.New("consensus: entry too large")
		}
		e.Bytes([]byte(en.Value))
		e.Uvarint(uint64(len(en.Chain)))
		for _, s := range en.Chain {
			if len(s.Sig) > maxSig {
				return 0, nil, errors.New("consensus: signature too large")
			}
			e.Uvarint(uint64(s.ID))
			e.Bytes(s.Sig)
		}
	}
	return MsgSigned, e.B, nil
}

// maxSig bounds a signature on the wire (Ed25519's are 64 bytes; a
// shorter or longer one decodes and then fails verification).
const maxSig = 64

func unmarshalSigned(p []byte) (Msg, error) {
	d := wire.NewDec(p)
	m := Msg{Signed: []SignedEntry{}}
	r := d.Uvarint()
	if r > 1<<16 {
		d.Fail("round")
	}
	m.Round = uint32(r)
	n := d.Count(maxEntries, 2)
	for i := 0; i < n && d.Err() == nil; i++ {
		var en SignedEntry
		en.Value = string(d.Bytes(maxValue))
		ln := d.Count(maxLabel, 2)
		for j := 0; j < ln && d.Err() == nil; j++ {
			id := d.ID()
			if id == node.None {
				d.Fail("process id")
			}
			en.Chain = append(en.Chain, Sig{ID: id, Sig: slices.Clone(d.Bytes(maxSig))})
		}
		m.Signed = append(m.Signed, en)
	}
	if err := d.Done(); err != nil {
		return Msg{}, err
	}
	return m, nil
}
