package mcast

import (
	"fmt"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// MsgType is an mcast message type. Values are part of the wire protocol:
// append only.
type MsgType uint8

const (
	// MsgData carries multicast messages (its own or relayed ones).
	MsgData MsgType = 1
	// MsgDigest tells every member, per sender (in peer order), how many of
	// its messages this member has received without a gap (Recv) and
	// delivered (Deliv): the basis of retransmission, of relaying a
	// crashed sender's messages, and of garbage collection.
	MsgDigest MsgType = 2

	// MsgSend is a local request (From == self): multicast the payloads of
	// Items, in order (up to 1,024 at once, sent in as few frames as fit).
	MsgSend MsgType = 64
	// MsgEnd is a local request: this member's input has ended.
	MsgEnd MsgType = 65
	// MsgWritten is a local request: the runner has written out
	// deliveries of Written cost in all (Cost of each payload), which
	// frees room under Config.Backlog.
	MsgWritten MsgType = 66
)

var typeNames = map[MsgType]string{MsgData: "data", MsgDigest: "digest", MsgSend: "send", MsgEnd: "end", MsgWritten: "written"}

func (t MsgType) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Item is one multicast message: the Seq-th (from 1) of Sender, with its
// vector timestamp (causal order only, one entry per member in peer order).
type Item struct {
	Sender  node.ID
	Seq     uint64
	VT      []uint64
	TS      uint64 // groups in Lamport total order: the sender's Lamport time at the send
	Payload []byte
}

// Msg is one mcast frame.
type Msg struct {
	Type  MsgType
	Items []Item
	Recv  []uint64
	Deliv []uint64
	// High (digests): per sender, the highest sequence number received; a
	// message below it that is missing is lost, not in flight.
	High []uint64
	// Final (digests): 0 while the member's input is open; then one more
	// than the number of messages it sent.
	Final uint64
	// Written (MsgWritten, local only): the cost of the deliveries the
	// runner has written out so far.
	Written uint64
}

// MaxPayload is the largest payload of a multicast message: what one
// sealed frame carries (wire.MaxPayload) less the data frame's own
// headers around a lone message (at most itemOverhead bytes, with every
// number at its widest). Under causal order the vector timestamp takes
// more: see PayloadLimit.
const MaxPayload = wire.MaxPayload - itemOverhead

// itemOverhead bounds the bytes of a data frame (Msg or GMsg) around one
// payload, vector timestamp aside.
const itemOverhead = 128

// vtEntry is the widest encoding of one vector timestamp entry.
const vtEntry = 9

// PayloadLimit is the largest payload a group of members members takes
// in order o: MaxPayload, less the vector timestamp under causal order.
func PayloadLimit(o Order, members int) int {
	if o == Causal {
		return MaxPayload - vtEntry*members
	}
	return MaxPayload
}

// Bounds on the wire, of the fixed group's frames and of pkg/mcast/group's.
const (
	MaxItems   = 4096    // messages in one frame
	MaxMembers = 1024    // members a frame names
	MaxSeq     = 1 << 62 // the largest sequence number, view or time a frame carries
)

const (
	maxItems   = MaxItems
	maxMembers = MaxMembers
	maxSeq     = MaxSeq
)

// Codec encodes mcast messages for package wire.
type Codec struct{}

func (Codec) Family() wire.Family { return wire.FamilyMcast }

func (Codec) Marshal(m Msg) (uint8, []byte, error) {
	if m.Type != MsgData && m.Type != MsgDigest {
		return 0, nil, fmt.Errorf("mcast: %v is not a wire message", m.Type)
	}
	if len(m.Items) > maxItems || len(m.Recv) > maxMembers || len(m.Deliv) > maxMembers || len(m.High) > maxMembers {
		return 0, nil, fmt.Errorf("mcast: message too large")
	}
	var e wire.Enc
	e.Uvarint(uint64(len(m.Items)))
	for _, it := range m.Items {
		if len(it.Payload) > MaxPayload || len(it.VT) > maxMembers {
			return 0, nil, fmt.Errorf("mcast: item too large")
		}
		e.Uvarint(uint64(it.Sender))
		e.Uvarint(it.Seq)
		e.Uvarint(uint64(len(it.VT)))
		for _, v := range it.VT {
			e.Uvarint(v)
		}
		e.Bytes(it.Payload)
	}
	for _, vec := range [][]uint64{m.Recv, m.Deliv, m.High} {
		e.Uvarint(uint64(len(vec)))
		for _, v := range vec {
			e.Uvarint(v)
		}
	}
	e.Uvarint(m.Final)
	return uint8(m.Type), e.B, nil
}

func (Codec) Unmarshal(typ uint8, p []byte) (Msg, error) {
	m := Msg{Type: MsgType(typ)}
	if m.Type != MsgData && m.Type != MsgDigest {
		return Msg{}, fmt.Errorf("%w: mcast message type %d", wire.ErrMalformed, typ)
	}
	d := wire.NewDec(p)
	if n := d.Count(maxItems, 4); n > 0 {
		m.Items = make([]Item, n)
		for i := range m.Items {
			it := &m.Items[i]
			it.Sender, it.Seq = d.ID(), d.Uvarint()
			if k := d.Count(maxMembers, 1); k > 0 {
				it.VT = make([]uint64, k)
				for j := range it.VT {
					it.VT[j] = d.Uvarint()
				}
			}
			it.Payload = d.Bytes(MaxPayload)
		}
	}
	vec := func() []uint64 {
		var out []uint64
		if k := d.Count(maxMembers, 1); k > 0 {
			out = make([]uint64, k)
			for j := range out {
				out[j] = d.Uvarint()
			}
		}
		return out
	}
	m.Recv, m.Deliv, m.High = vec(), vec(), vec()
	m.Final = d.Uvarint()
	if m.Final > maxSeq {
		d.Fail("final count")
	}
	if err := d.Done(); err != nil {
		return Msg{}, err
	}
	for _, it := range m.Items {
		if it.Sender == node.None || it.Seq == 0 || it.Seq > maxSeq {
			return Msg{}, fmt.Errorf("%w: item %d/%d", wire.ErrMalformed, it.Sender, it.Seq)
		}
		for _, v := range it.VT {
			if v > maxSeq {
				return Msg{}, fmt.Errorf("%w: vector entry %d", wire.ErrMalformed, v)
			}
		}
	}
	for _, v := range slices.Concat(m.Recv, m.Deliv, m.High) {
		if v > maxSeq {
			return Msg{}, fmt.Errorf("%w: digest entry %d", wire.ErrMalformed, v)
		}
	}
	return m, nil
}
