package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Enc appends values to a payload. The zero value is ready to use.
type Enc struct{ B []byte }

func (e *Enc) U8(v uint8)       { e.B = append(e.B, v) }
func (e *Enc) Uvarint(v uint64) { e.B = binary.AppendUvarint(e.B, v) }
func (e *Enc) Varint(v int64)   { e.B = binary.AppendVarint(e.B, v) }
func (e *Enc) U64(v uint64)     { e.B = binary.BigEndian.AppendUint64(e.B, v) }
func (e *Enc) Bool(v bool) {
	if v {
		e.U8(1)
	} else {
		e.U8(0)
	}
}

// Bytes appends a length-prefixed byte string.
func (e *Enc) Bytes(p []byte) { e.Uvarint(uint64(len(p))); e.B = append(e.B, p...) }

// Dec reads values from an untrusted payload. The first failure sticks:
// every later read returns zero values, and Err reports what went wrong, so
// callers decode a whole message and check Err once.
type Dec struct {
	b   []byte
	err error
}

// NewDec returns a decoder over p.
func NewDec(p []byte) *Dec { return &Dec{b: p} }

// Fail marks the payload invalid (for checks the caller makes, such as a
// value out of range); later reads return zero values.
func (d *Dec) Fail(what string) { d.fail(what) }

func (d *Dec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or invalid %s", ErrMalformed, what)
	}
	d.b = nil
}

// Err returns the first decoding error, or nil.
func (d *Dec) Err() error { return d.err }

// More reports whether unread bytes remain (and nothing failed): a field a
// later version appends is read only if its sender wrote it.
func (d *Dec) More() bool { return d.err == nil && len(d.b) != 0 }

// Done returns the first error, or an error if unread bytes remain.
func (d *Dec) Done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.b))
	}
	return d.err
}

func (d *Dec) U8() uint8 {
	if len(d.b) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *Dec) Bool() bool {
	switch d.U8() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bool")
	return false
}

func (d *Dec) U64() uint64 {
	if len(d.b) < 8 {
		d.fail("uint64")
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *Dec) Uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// U32 reads a uvarint that must fit 32 bits (what names the field in the
// error).
func (d *Dec) U32(what string) uint32 {
	v := d.Uvarint()
	if v > 1<<32-1 {
		d.fail(what)
		return 0
	}
	return uint32(v)
}

// ID reads a process ID: a uvarint that must fit 32 bits. Zero (no
// process) is the caller's to refuse where it matters.
func (d *Dec) ID() node.ID { return node.ID(d.U32("process id")) }

func (d *Dec) Varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Count reads a length or element count and rejects it when it exceeds max
// or could not possibly fit in the remaining bytes (each element takes at
// least minSize bytes). It is the guard against allocating from an
// untrusted length.
func (d *Dec) Count(max, minSize int) int {
	v := d.Uvarint()
	if d.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if v > uint64(max) || v > uint64(len(d.b)/minSize) {
		d.fail("count")
		return 0
	}
	return int(v)
}

// Bytes reads a length-prefixed byte string of at most max bytes. The
// result aliases the input.
func (d *Dec) Bytes(max int) []byte {
	n := d.Count(max, 1)
	if d.err != nil {
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
