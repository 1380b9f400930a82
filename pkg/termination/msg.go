package termination

import (
	"fmt"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// MsgType is a termination message type. Values are part of the wire
// protocol: append only.
type MsgType uint8

const (
	MsgWork     MsgType = 1 // application work; Seq numbers it
	MsgWorkAck  MsgType = 2 // work Seq arrived
	MsgMarker   MsgType = 3 // the marker: Seq its emission count, White the streak, Members the crashed then the receivers
	MsgProbe    MsgType = 4 // a backup asks a watched process to show it is alive
	MsgProbeAck MsgType = 5
	MsgDone     MsgType = 6 // termination; Members the crashed processes
	MsgSend     MsgType = 7 // local: send work to To
	MsgIdle     MsgType = 8 // local: this process is passive
	// MsgMarkerAck: marker emission Seq arrived. The paper assumes reliable
	// channels; over datagrams each copy is acknowledged and resent.
	MsgMarkerAck MsgType = 9
	MsgDoneAck   MsgType = 10 // the announcement arrived
)

var typeNames = map[MsgType]string{MsgWork: "work", MsgWorkAck: "work-ack", MsgMarker: "marker",
	MsgProbe: "probe", MsgProbeAck: "probe-ack", MsgDone: "done", MsgSend: "send", MsgIdle: "idle",
	MsgMarkerAck: "marker-ack", MsgDoneAck: "done-ack"}

func (t MsgType) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Msg is one termination message.
type Msg struct {
	Type     MsgType
	Seq      uint64
	To       node.ID // MsgSend
	NCrashed int     // Marker: how many of Members are crashed processes
	White    []node.ID
	Members  []node.ID
}

const maxList = 4096

// Codec encodes termination messages for package wire.
type Codec struct{}

func (Codec) Family() wire.Family { return wire.FamilyTermination }

func (Codec) Marshal(m Msg) (uint8, []byte, error) {
	if !onWire(m.Type) {
		return 0, nil, fmt.Errorf("termination: %v is not a wire message", m.Type)
	}
	if len(m.White) > maxList || len(m.Members) > maxList || m.NCrashed < 0 || m.NCrashed > len(m.Members) {
		return 0, nil, fmt.Errorf("termination: bad lists (%d white, %d members, %d crashed)", len(m.White), len(m.Members), m.NCrashed)
	}
	var e wire.Enc
	e.Uvarint(m.Seq)
	e.Uvarint(uint64(m.NCrashed))
	for _, l := range [][]node.ID{m.White, m.Members} {
		e.Uvarint(uint64(len(l)))
		for _, id := range l {
			e.Uvarint(uint64(id))
		}
	}
	return uint8(m.Type), e.B, nil
}

func (Codec) Unmarshal(typ uint8, p []byte) (Msg, error) {
	m := Msg{Type: MsgType(typ)}
	if !onWire(m.Type) {
		return Msg{}, fmt.Errorf("%w: termination message type %d", wire.ErrMalformed, typ)
	}
	d := wire.NewDec(p)
	m.Seq = d.Uvarint()
	nc := d.Uvarint()
	for _, l := range []*[]node.ID{&m.White, &m.Members} {
		if n := d.Count(maxList, 1); n > 0 {
			*l = make([]node.ID, n)
			for i := range *l {
				(*l)[i] = d.ID()
			}
		}
	}
	if err := d.Done(); err != nil {
		return Msg{}, err
	}
	if nc > uint64(len(m.Members)) {
		return Msg{}, fmt.Errorf("%w: %d crashed of %d members", wire.ErrMalformed, nc, len(m.Members))
	}
	m.NCrashed = int(nc)
	return m, nil
}

// onWire: the types sent between processes (MsgSend and MsgIdle are local).
func onWire(t MsgType) bool {
	return t >= MsgWork && t <= MsgDone || t == MsgMarkerAck || t == MsgDoneAck
}
