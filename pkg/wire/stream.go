package wire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// WriteFrame writes one frame to a stream with a 4-byte big-endian length
// prefix.
func WriteFrame(w io.Writer, frame []byte) error {
	if len(frame) > MaxFrame {
		return ErrTooLarge
	}
	buf := make([]byte, 4+len(frame))
	binary.BigEndian.PutUint32(buf, uint32(len(frame)))
	copy(buf[4:], frame)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one length-prefixed frame. A length above MaxFrame is
// rejected before any allocation.
func ReadFrame(r io.Reader) ([]byte, error) {
	var lb [4]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lb[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: stream frame claims %d bytes", ErrTooLarge, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// Codec turns a protocol's messages into frame payloads and back. Marshal
// returns the message type byte for the header; Unmarshal must never panic
// on arbitrary input.
type Codec[M any] interface {
	Family() Family
	Marshal(m M) (typ uint8, payload []byte, err error)
	Unmarshal(typ uint8, payload []byte) (M, error)
}
