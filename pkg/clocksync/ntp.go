package clocksync

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// PacketSize is the size of an NTPv4 packet without extensions.
const PacketSize = 48

// Modes (RFC 5905 Figure 10).
const (
	ModeClient = 3
	ModeServer = 4
)

// Leap indicator values; LeapAlarm means "unsynchronised": clients must
// not use the server.
const (
	LeapNone  = 0
	LeapAlarm = 3
)

// Packet is an NTPv4 header (RFC 5905 §7.3).
type Packet struct {
	Leap      uint8
	Version   uint8
	Mode      uint8
	Stratum   uint8
	Poll      int8
	Precision int8          // log2 seconds
	RootDelay time.Duration // NTP short format on the wire (16.16 seconds)
	RootDisp  time.Duration
	RefID     [4]byte
	RefTime   time.Time
	Origin    time.Time // T1 as the client sent it (echoed by the server)
	Receive   time.Time // T2
	Transmit  time.Time // T3 (a client's own send time in requests)

	// The raw 64-bit wire values of Origin and Transmit. A server echoes
	// the request's transmit bits exactly (clients match replies on them,
	// and some send random bits there); converting through time.Time would
	// lose the lowest bits.
	OriginRaw, TransmitRaw uint64
}

// ErrShort is returned for a datagram shorter than PacketSize.
var ErrShort = errors.New("clocksync: NTP packet shorter than 48 bytes")

// ntpEpoch is 1900-01-01, era 0.
var ntpEpoch = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

// eraSeconds is the length of one NTP era (2^32 s).
const eraSeconds = 1 << 32

// pivot: timestamps are read in the era that places them nearest to 2036
// minus 68 years ... plus 68 years, i.e. 1968–2104 (RFC 4330 §3's rule).
var pivot = time.Date(1968, 1, 20, 3, 14, 8, 0, time.UTC)

func putTime(b []byte, t time.Time) {
	if t.IsZero() {
		binary.BigEndian.PutUint64(b, 0)
		return
	}
	d := t.Sub(ntpEpoch)
	sec := uint64(d / time.Second)
	frac := uint64(d%time.Second) << 32 / uint64(time.Second)
	binary.BigEndian.PutUint64(b, (sec%eraSeconds)<<32|frac)
}

func getTime(b []byte) time.Time {
	v := binary.BigEndian.Uint64(b)
	if v == 0 {
		return time.Time{}
	}
	sec, frac := v>>32, v&0xffffffff
	t := ntpEpoch.Add(time.Duration(sec) * time.Second).Add(time.Duration(frac * uint64(time.Second) >> 32))
	if t.Before(pivot) {
		t = t.Add(eraSeconds * time.Second) // era 1 (from 2036)
	}
	return t
}

func putShort(b []byte, d time.Duration) {
	if d < 0 {
		d = 0
	}
	v := uint64(d) << 16 / uint64(time.Second)
	if v > math.MaxUint32 {
		v = math.MaxUint32
	}
	binary.BigEndian.PutUint32(b, uint32(v))
}

// getShort rounds up, so that putShort (which rounds down) restores the
// exact 16.16 value.
func getShort(b []byte) time.Duration {
	return time.Duration((uint64(binary.BigEndian.Uint32(b))*uint64(time.Second) + 0xffff) >> 16)
}

// Marshal encodes p into a 48-byte datagram.
func (p Packet) Marshal() []byte {
	b := make([]byte, PacketSize)
	b[0] = p.Leap<<6 | (p.Version&7)<<3 | p.Mode&7
	b[1] = p.Stratum
	b[2] = byte(p.Poll)
	b[3] = byte(p.Precision)
	putShort(b[4:], p.RootDelay)
	putShort(b[8:], p.RootDisp)
	copy(b[12:16], p.RefID[:])
	putTime(b[16:], p.RefTime)
	putTime(b[24:], p.Origin)
	if p.OriginRaw != 0 {
		binary.BigEndian.PutUint64(b[24:], p.OriginRaw)
	}
	putTime(b[32:], p.Receive)
	putTime(b[40:], p.Transmit)
	if p.TransmitRaw != 0 {
		binary.BigEndian.PutUint64(b[40:], p.TransmitRaw)
	}
	return b
}

// Unmarshal decodes a datagram. Extension fields and MACs after the header
// are ignored. It never panics.
func Unmarshal(b []byte) (Packet, error) {
	if len(b) < PacketSize {
		return Packet{}, ErrShort
	}
	p := Packet{Leap: b[0] >> 6, Version: b[0] >> 3 & 7, Mode: b[0] & 7, Stratum: b[1],
		Poll: int8(b[2]), Precision: int8(b[3]), RootDelay: getShort(b[4:]), RootDisp: getShort(b[8:]),
		RefTime: getTime(b[16:]), Origin: getTime(b[24:]), Receive: getTime(b[32:]), Transmit: getTime(b[40:])}
	copy(p.RefID[:], b[12:16])
	p.OriginRaw, p.TransmitRaw = binary.BigEndian.Uint64(b[24:]), binary.BigEndian.Uint64(b[40:])
	if p.Version < 1 || p.Version > 4 {
		return p, fmt.Errorf("clocksync: NTP version %d", p.Version)
	}
	return p, nil
}

// Server describes what a server says about itself.
type Server struct {
	Synced    bool // false: answer with leap = alarm so clients refuse us
	Stratum   uint8
	RefID     [4]byte
	RefTime   time.Time
	Precision int8
	RootDelay time.Duration
	RootDisp  time.Duration
}

// Reply builds the answer to a client request received at recv (T2) and
// sent at xmit (T3). It returns false for anything but a client request.
func (s Server) Reply(req Packet, recv, xmit time.Time) (Packet, bool) {
	if req.Mode != ModeClient {
		return Packet{}, false
	}
	p := Packet{Version: req.Version, Mode: ModeServer, Stratum: s.Stratum, Poll: req.Poll, Precision: s.Precision,
		RootDelay: s.RootDelay, RootDisp: s.RootDisp, RefID: s.RefID, RefTime: s.RefTime,
		Origin: req.Transmit, OriginRaw: req.TransmitRaw, Receive: recv, Transmit: xmit}
	if !s.Synced {
		p.Leap, p.Stratum = LeapAlarm, 16 // unsynchronised (RFC 5905 §7.3: stratum 16)
	}
	return p, true
}

// Sample is one client/server exchange: T1 client send, T2 server receive,
// T3 server send, T4 client receive.
type Sample struct {
	T1, T2, T3, T4 time.Time
}

// Offset is θ = ((T2 − T1) + (T3 − T4)) / 2: how far the server's clock is
// ahead of ours.
func (s Sample) Offset() time.Duration { return (s.T2.Sub(s.T1) + s.T3.Sub(s.T4)) / 2 }

// Delay is δ = (T4 − T1) − (T3 − T2): the round trip without the server's
// handling time.
func (s Sample) Delay() time.Duration { return s.T4.Sub(s.T1) - s.T3.Sub(s.T2) }

// Filter keeps the last eight samples and picks the one with the smallest
// delay, whose offset is the least disturbed by queueing (Tanenbaum ch. 6; RFC
// 5905 §10's clock filter).
type Filter struct {
	samples []Sample
}

// FilterSize is the number of samples kept.
const FilterSize = 8

// Add records a sample, dropping the oldest beyond FilterSize.
func (f *Filter) Add(s Sample) {
	f.samples = append(f.samples, s)
	if len(f.samples) > FilterSize {
		f.samples = f.samples[1:]
	}
}

// Best returns the sample with the minimum delay, and false when empty.
func (f *Filter) Best() (Sample, bool) {
	if len(f.samples) == 0 {
		return Sample{}, false
	}
	best := f.samples[0]
	for _, s := range f.samples[1:] {
		if s.Delay() < best.Delay() {
			best = s
		}
	}
	return best, true
}
