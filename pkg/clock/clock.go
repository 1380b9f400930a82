package clock

import (
	"sync"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// System reads the operating system clock (with its monotonic reading).
type System struct{}

func (System) Now() time.Time { return time.Now() }

// Manual is a virtual clock that only moves when told. Its zero value reads
// the Unix epoch. It is safe for concurrent use.
type Manual struct {
	mu sync.Mutex
	t  time.Time
}

// NewManual returns a Manual clock reading t.
func NewManual(t time.Time) *Manual { return &Manual{t: t} }

func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.t.IsZero() {
		return time.Unix(0, 0)
	}
	return m.t
}

// Advance moves the clock forward by d (negative d is ignored: virtual time
// never runs backwards).
func (m *Manual) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	m.mu.Lock()
	if m.t.IsZero() {
		m.t = time.Unix(0, 0)
	}
	m.t = m.t.Add(d)
	m.mu.Unlock()
}

// Set moves the clock to t if t is later than the current reading.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	if t.After(m.t) {
		m.t = t
	}
	m.mu.Unlock()
}

// Skewed reads Base through an offset and a frequency error: at base time b
// it reads b + Offset + (b − Epoch)·DriftPPM/10⁶. A DriftPPM of 200 gains
// 200 µs per second of base time.
type Skewed struct {
	Base     Clock
	Offset   time.Duration
	DriftPPM float64
	Epoch    time.Time // when the drift started accumulating
}

func (s Skewed) Now() time.Time { return s.At(s.Base.Now()) }

// At maps a base-clock reading to this clock's reading.
func (s Skewed) At(base time.Time) time.Time {
	if s.DriftPPM == 0 {
		return base.Add(s.Offset)
	}
	drift := time.Duration(float64(base.Sub(s.Epoch)) * s.DriftPPM / 1e6)
	return base.Add(s.Offset + drift)
}

// BaseOf maps a reading of this clock back to the base clock, the inverse of
// At. Simulators use it to schedule a node's local wake-up time.
func (s Skewed) BaseOf(local time.Time) time.Time {
	// local = base + off + (base-epoch)*k  =>  base = (local - off + epoch*k)/(1+k)
	if s.DriftPPM == 0 {
		return local.Add(-s.Offset)
	}
	k := s.DriftPPM / 1e6
	d := local.Sub(s.Epoch) - s.Offset
	return s.Epoch.Add(time.Duration(float64(d) / (1 + k)))
}
