package coords

import (
	"fmt"
	"math"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// MsgType is a coordinates message type. Values are part of the wire
// protocol: append only.
type MsgType uint8

const (
	// MsgPing asks for a pong; EchoNS is the sender's clock.
	MsgPing MsgType = 1
	// MsgPong answers a ping: EchoNS echoed, and the sender's coordinates
	// and error; a landmark adds its measured round trips to the other
	// landmarks (Row), the landmark that fits them their positions
	// (Landmarks).
	MsgPong MsgType = 2
)

// RowEntry is one measured round trip, in microseconds.
type RowEntry struct {
	ID  node.ID
	RTT uint64
}

// Placed is a landmark's fitted position.
type Placed struct {
	ID  node.ID
	Pos Coord
}

// Msg is one coordinates message.
type Msg struct {
	Type      MsgType
	Seq       uint64
	EchoNS    int64
	Pos       Coord
	Err       float64
	Row       []RowEntry
	Landmarks []Placed
}

const (
	maxDims      = 16
	maxLandmarks = 32
)

// Codec encodes coordinates messages for package wire.
type Codec struct{}

func (Codec) Family() wire.Family { return wire.FamilyCoords }

func putCoord(e *wire.Enc, c Coord) {
	e.Uvarint(uint64(len(c.Vec)))
	for _, x := range c.Vec {
		e.U64(math.Float64bits(x))
	}
	e.U64(math.Float64bits(c.Height))
}

func (Codec) Marshal(m Msg) (uint8, []byte, error) {
	if m.Type != MsgPing && m.Type != MsgPong {
		return 0, nil, fmt.Errorf("coords: message type %d", m.Type)
	}
	if len(m.Pos.Vec) > maxDims || len(m.Row) > maxLandmarks || len(m.Landmarks) > maxLandmarks {
		return 0, nil, fmt.Errorf("coords: message too large")
	}
	var e wire.Enc
	e.Uvarint(m.Seq)
	e.Varint(m.EchoNS)
	putCoord(&e, m.Pos)
	e.U64(math.Float64bits(m.Err))
	e.Uvarint(uint64(len(m.Row)))
	for _, r := range m.Row {
		e.Uvarint(uint64(r.ID))
		e.Uvarint(r.RTT)
	}
	e.Uvarint(uint64(len(m.Landmarks)))
	for _, l := range m.Landmarks {
		if len(l.Pos.Vec) > maxDims {
			return 0, nil, fmt.Errorf("coords: message too large")
		}
		e.Uvarint(uint64(l.ID))
		putCoord(&e, l.Pos)
	}
	return uint8(m.Type), e.B, nil
}

func (Codec) Unmarshal(typ uint8, p []byte) (Msg, error) {
	m := Msg{Type: MsgType(typ)}
	if m.Type != MsgPing && m.Type != MsgPong {
		return Msg{}, fmt.Errorf("%w: coords message type %d", wire.ErrMalformed, typ)
	}
	d := wire.NewDec(p)
	f := func() float64 {
		v := math.Float64frombits(d.U64())
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e9 {
			d.Fail("number out of range")
			return 0
		}
		return v
	}
	coord := func() Coord {
		var c Coord
		if n := d.Count(maxDims, 8); n > 0 {
			c.Vec = make([]float64, n)
			for i := range c.Vec {
				c.Vec[i] = f()
			}
		}
		c.Height = f()
		return c
	}
	m.Seq = d.Uvarint()
	m.EchoNS = d.Varint()
	m.Pos = coord()
	m.Err = f()
	if n := d.Count(maxLandmarks, 2); n > 0 {
		m.Row = make([]RowEntry, n)
		for i := range m.Row {
			m.Row[i] = RowEntry{ID: d.ID(), RTT: d.Uvarint()}
		}
	}
	if n := d.Count(maxLandmarks, 10); n > 0 {
		m.Landmarks = make([]Placed, n)
		for i := range m.Landmarks {
			m.Landmarks[i] = Placed{ID: d.ID(), Pos: coord()}
		}
	}
	if err := d.Done(); err != nil {
		return Msg{}, err
	}
	return m, nil
}
