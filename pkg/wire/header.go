package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Version is the wire version this package writes and accepts. Version 2
// names the receiver in the header, so that a sealed frame is bound to the
// member it was sealed for. Version 3 names the key that sealed a frame
// (KeyID), so that a receiver holding several keys tries one.
const Version = 3

// HeaderSize is the size of the fixed frame header in bytes.
const HeaderSize = 36

// MaxFrame bounds every frame, sealed or not. A UDP datagram larger than
// this is never produced, and a stream frame claiming more is rejected
// before anything is allocated.
const MaxFrame = 60 * 1024

// Family says which protocol a frame belongs to. Values are part of the wire
// protocol: append only.
type Family uint8

const (
	FamilyControl   Family = 1 // driver-level status queries, shared by every tool
	FamilyElection  Family = 2
	FamilyMutex     Family = 3
	FamilyTicket    Family = 4
	FamilyClock     Family = 5
	FamilyConsensus Family = 6
	FamilyMcast     Family = 7
	FamilyCoords    Family = 8
)

// FamilyTermination is termination detection (package termination).
const FamilyTermination Family = 9

const (
	magic0    = 'R'
	magic1    = 'T'
	flagSeal  = 1
	flagsMask = flagSeal
)

// Header is the decoded fixed header of a frame.
type Header struct {
	Family      Family
	Type        uint8
	Sealed      bool
	Cluster     uint32
	From        node.ID
	To          node.ID // the receiver: a frame that reaches anyone else is dropped
	Incarnation uint64
	Seq         uint64
	KeyID       uint16 // sealed: KeyID of the key that sealed the frame; unsealed: 0
}

// Errors returned by the decoders. They are sentinel values so callers can
// count drops by cause.
var (
	ErrMalformed = errors.New("wire: malformed frame")
	ErrVersion   = errors.New("wire: unsupported version")
	ErrCluster   = errors.New("wire: frame from another cluster")
	ErrAuth      = errors.New("wire: authentication failed")
	ErrUnsealed  = errors.New("wire: unsealed frame where a key is configured")
	ErrStale     = errors.New("wire: stale incarnation")
	ErrReplay    = errors.New("wire: replayed sequence number")
	ErrMisdirect = errors.New("wire: frame meant for another receiver")
	ErrFuture    = errors.New("wire: incarnation from the future")
	ErrStranger  = errors.New("wire: frame from a sender that is not a member")
	ErrTooLarge  = errors.New("wire: frame too large")
)

// ClusterHash maps a cluster name to the 32-bit value carried in headers.
func ClusterHash(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

// PutHeader writes h into b[:HeaderSize].
func PutHeader(b []byte, h Header) {
	_ = b[HeaderSize-1]
	b[0], b[1], b[2] = magic0, magic1, Version
	b[3] = byte(h.Family)
	b[4] = h.Type
	b[5] = 0
	if h.Sealed {
		b[5] = flagSeal
	}
	binary.BigEndian.PutUint16(b[6:], h.KeyID)
	binary.BigEndian.PutUint32(b[8:], h.Cluster)
	binary.BigEndian.PutUint32(b[12:], uint32(h.From))
	binary.BigEndian.PutUint32(b[16:], uint32(h.To))
	binary.BigEndian.PutUint64(b[20:], h.Incarnation)
	binary.BigEndian.PutUint64(b[28:], h.Seq)
}

// ParseHeader decodes the header at the start of frame. It never panics.
func ParseHeader(frame []byte) (Header, error) {
	if len(frame) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, header needs %d", ErrMalformed, len(frame), HeaderSize)
	}
	if len(frame) > MaxFrame {
		return Header{}, ErrTooLarge
	}
	if frame[0] != magic0 || frame[1] != magic1 {
		return Header{}, fmt.Errorf("%w: bad magic", ErrMalformed)
	}
	if frame[2] != Version {
		return Header{}, fmt.Errorf("%w: %d", ErrVersion, frame[2])
	}
	if frame[5]&^flagsMask != 0 {
		return Header{}, fmt.Errorf("%w: reserved bits set", ErrMalformed)
	}
	if frame[5]&flagSeal == 0 && (frame[6] != 0 || frame[7] != 0) {
		return Header{}, fmt.Errorf("%w: key ID in an unsealed frame", ErrMalformed)
	}
	h := Header{
		Family:      Family(frame[3]),
		Type:        frame[4],
		Sealed:      frame[5]&flagSeal != 0,
		Cluster:     binary.BigEndian.Uint32(frame[8:]),
		From:        node.ID(binary.BigEndian.Uint32(frame[12:])),
		To:          node.ID(binary.BigEndian.Uint32(frame[16:])),
		Incarnation: binary.BigEndian.Uint64(frame[20:]),
		Seq:         binary.BigEndian.Uint64(frame[28:]),
		KeyID:       binary.BigEndian.Uint16(frame[6:]),
	}
	if h.From == node.None || h.To == node.None {
		return Header{}, fmt.Errorf("%w: sender or receiver id 0", ErrMalformed)
	}
	return h, nil
}
