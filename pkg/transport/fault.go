package transport

import (
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Faults configures a Faulty transport. Probabilities are in [0,1].
type Faults struct {
	Drop  float64       // probability an outgoing frame is dropped
	Dup   float64       // probability an outgoing frame is sent twice
	Delay time.Duration // each frame is held for a uniform random time in [0, Delay]; this also reorders
	Seed  uint64        // seeds the fault decisions, so a run's faults can be replayed
	// Latency holds every frame to a peer for a fixed time (a geometry of
	// link delays: network coordinates), on top of Delay.
	Latency map[node.ID]time.Duration
}

// Active reports whether any fault is configured.
func (f Faults) Active() bool { return f.Drop > 0 || f.Dup > 0 || f.Delay > 0 || len(f.Latency) > 0 }

// Faulty wraps a Transport and injects faults on the sending side.
type Faulty struct {
	Transport
	f   Faults
	mu  sync.Mutex
	rng *rand.Rand
	cut map[node.ID]bool
	// Dropped counts frames the injector discarded (drops and cuts).
	dropped uint64
}

// NewFaulty wraps t.
func NewFaulty(t Transport, f Faults) *Faulty {
	return &Faulty{Transport: t, f: f, rng: rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15)), cut: map[node.ID]bool{}}
}

// Cut stops all frames to peer (a one-way cut); Heal restores them.
func (t *Faulty) Cut(peer node.ID) { t.mu.Lock(); t.cut[peer] = true; t.mu.Unlock() }

// Heal removes every cut.
func (t *Faulty) Heal() { t.mu.Lock(); clear(t.cut); t.mu.Unlock() }

// Dropped returns how many frames were discarded by the injector.
func (t *Faulty) Dropped() uint64 { t.mu.Lock(); defer t.mu.Unlock(); return t.dropped }

func (t *Faulty) Send(to node.ID, frame []byte) error {
	t.mu.Lock()
	if t.cut[to] || t.rng.Float64() < t.f.Drop {
		t.dropped++
		t.mu.Unlock()
		return nil
	}
	copies := 1
	if t.rng.Float64() < t.f.Dup {
		copies = 2
	}
	delays := make([]time.Duration, copies)
	for i := range delays {
		if t.f.Delay > 0 {
			delays[i] = time.Duration(t.rng.Int64N(int64(t.f.Delay) + 1))
		}
		delays[i] += t.f.Latency[to]
	}
	t.mu.Unlock()
	for _, d := range delays {
		if d == 0 {
			if err := t.Transport.Send(to, frame); err != nil {
				return err
			}
			continue
		}
		f := append([]byte(nil), frame...)
		time.AfterFunc(d, func() { _ = t.Transport.Send(to, f) })
	}
	return nil
}

// Dynamic is a transport whose peers are learnt as it runs (UDP).
type Dynamic interface {
	SetPeer(id node.ID, a netip.AddrPort)
	SendAddr(a netip.AddrPort, frame []byte) error
}

// Mover is a transport whose peers can move to new addresses as it runs
// (UDP, TCP).
type Mover interface {
	SetPeer(id node.ID, a netip.AddrPort)
}

// SetPeer passes on to a Mover underneath (and does nothing otherwise).
func (t *Faulty) SetPeer(id node.ID, a netip.AddrPort) {
	if d, ok := t.Transport.(Mover); ok {
		d.SetPeer(id, a)
	}
}

// SendAddr passes on to a Dynamic transport underneath, with the drop
// rate applied.
func (t *Faulty) SendAddr(a netip.AddrPort, frame []byte) error {
	d, ok := t.Transport.(Dynamic)
	if !ok {
		return ErrUnknownPeer
	}
	t.mu.Lock()
	drop := t.rng.Float64() < t.f.Drop
	t.mu.Unlock()
	if drop {
		return nil
	}
	return d.SendAddr(a, frame)
}
