package gossip

import (
	"fmt"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// MsgType is a gossip message type. Values are part of the wire protocol:
// append only.
type MsgType uint8

const (
	// MsgPush carries events to a random peer (the push phase).
	MsgPush MsgType = 1
	// MsgDigest tells a random peer, per origin, the highest sequence
	// number below which this member has every event (anti-entropy).
	MsgDigest MsgType = 2
	// MsgRepair answers a digest with events the asker lacks.
	MsgRepair MsgType = 3
	// MsgShuffle offers a member entries of the sender's partial view,
	// the sender's own first (view.go, Cyclon's shuffle).
	MsgShuffle MsgType = 4
	// MsgShuffleReply answers a shuffle with entries of the receiver's
	// view.
	MsgShuffleReply MsgType = 5

	// MsgBroadcast is a local request (From == self): disseminate the
	// payloads of Events, in order.
	MsgBroadcast MsgType = 64
)

var typeNames = map[MsgType]string{MsgPush: "push", MsgDigest: "digest", MsgRepair: "repair", MsgShuffle: "shuffle", MsgShuffleReply: "shufflereply", MsgBroadcast: "broadcast"}

func (t MsgType) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Event is one broadcast: the origin's Seq-th (from 1), with the number of
// push rounds it has left (TTL).
type Event struct {
	Origin  node.ID
	Seq     uint64
	TTL     uint8
	Payload []byte
}

// Have is one digest entry: every event of Origin below Next has been
// delivered here.
type Have struct {
	Origin node.ID
	Next   uint64
}

// Msg is one gossip message.
type Msg struct {
	Type   MsgType
	Events []Event
	Digest []Have
	View   []ViewEntry // MsgShuffle and MsgShuffleReply
}

// Wire bounds: a frame carries at most maxEvents events, maxPayload bytes
// each, and maxDigest digest entries.
const (
	maxEvents  = 1024
	MaxPayload = 32 << 10
	maxDigest  = 4096
	maxSeq     = 1 << 62
)

// Codec encodes gossip messages for package wire. The family is the
// caller's: ticketd's PrCast and mcast each carry gossip in their own.
type Codec struct{ Fam wire.Family }

func (c Codec) Family() wire.Family { return c.Fam }

func (Codec) Marshal(m Msg) (uint8, []byte, error) {
	if m.Type < MsgPush || m.Type > MsgShuffleReply {
		return 0, nil, fmt.Errorf("gossip: %v is not a wire message", m.Type)
	}
	if m.Type >= MsgShuffle {
		if len(m.View) > MaxView {
			return 0, nil, fmt.Errorf("gossip: %d view entries are too many", len(m.View))
		}
		var e wire.Enc
		e.Uvarint(uint64(len(m.View)))
		for _, v := range m.View {
			e.Uvarint(uint64(v.ID))
			e.U8(v.Age)
		}
		return uint8(m.Type), e.B, nil
	}
	if len(m.Events) > maxEvents || len(m.Digest) > maxDigest {
		return 0, nil, fmt.Errorf("gossip: %d events or %d digest entries are too many", len(m.Events), len(m.Digest))
	}
	var e wire.Enc
	e.Uvarint(uint64(len(m.Events)))
	for _, ev := range m.Events {
		if len(ev.Payload) > MaxPayload {
			return 0, nil, fmt.Errorf("gossip: payload of %d bytes exceeds %d", len(ev.Payload), MaxPayload)
		}
		e.Uvarint(uint64(ev.Origin))
		e.Uvarint(ev.Seq)
		e.U8(ev.TTL)
		e.Bytes(ev.Payload)
	}
	e.Uvarint(uint64(len(m.Digest)))
	for _, h := range m.Digest {
		e.Uvarint(uint64(h.Origin))
		e.Uvarint(h.Next)
	}
	return uint8(m.Type), e.B, nil
}

func (Codec) Unmarshal(typ uint8, p []byte) (Msg, error) {
	m := Msg{Type: MsgType(typ)}
	if m.Type < MsgPush || m.Type > MsgShuffleReply {
		return Msg{}, fmt.Errorf("%w: gossip message type %d", wire.ErrMalformed, typ)
	}
	d := wire.NewDec(p)
	if m.Type >= MsgShuffle {
		if n := d.Count(MaxView, 2); n > 0 {
			m.View = make([]ViewEntry, n)
			for i := range m.View {
				m.View[i] = ViewEntry{ID: d.ID(), Age: d.U8()}
			}
		}
		if err := d.Done(); err != nil {
			return Msg{}, err
		}
		for _, v := range m.View {
			if v.ID == node.None {
				return Msg{}, fmt.Errorf("%w: view entry 0", wire.ErrMalformed)
			}
		}
		return m, nil
	}
	if n := d.Count(maxEvents, 4); n > 0 {
		m.Events = make([]Event, n)
		for i := range m.Events {
			m.Events[i] = Event{Origin: d.ID(), Seq: d.Uvarint(), TTL: d.U8(), Payload: d.Bytes(MaxPayload)}
		}
	}
	if n := d.Count(maxDigest, 2); n > 0 {
		m.Digest = make([]Have, n)
		for i := range m.Digest {
			m.Digest[i] = Have{Origin: d.ID(), Next: d.Uvarint()}
		}
	}
	if err := d.Done(); err != nil {
		return Msg{}, err
	}
	for _, ev := range m.Events {
		if ev.Origin == node.None || ev.Seq == 0 || ev.Seq > maxSeq {
			return Msg{}, fmt.Errorf("%w: event %d/%d", wire.ErrMalformed, ev.Origin, ev.Seq)
		}
	}
	for _, h := range m.Digest {
		if h.Next > maxSeq {
			return Msg{}, fmt.Errorf("%w: digest %d/%d", wire.ErrMalformed, h.Origin, h.Next)
		}
	}
	return m, nil
}
