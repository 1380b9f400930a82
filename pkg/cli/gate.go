package cli

import (
	"net/netip"
	"sync"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// gate is the transport of a member whose peers are found by name: it
// carries no frame to or from a member whose record is gone (follow
// closes it, and opens it again when the record returns). To the protocol
// such a member is silent, which every protocol here reads as having
// failed or left: mcast installs a view without it, elect and lockd no
// longer count it towards a majority.
type gate struct {
	transport.Transport
	mu     sync.RWMutex
	closed map[node.ID]bool
}

func newGate(t transport.Transport) *gate {
	return &gate{Transport: t, closed: map[node.ID]bool{}}
}

// set shuts (open false) or opens the gate for member id.
func (g *gate) set(id node.ID, open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if open {
		delete(g.closed, id)
	} else {
		g.closed[id] = true
	}
}

func (g *gate) shut(id node.ID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.closed[id]
}

// Send drops a frame for a member whose record is gone.
func (g *gate) Send(to node.ID, frame []byte) error {
	if g.shut(to) {
		return nil
	}
	return g.Transport.Send(to, frame)
}

// Recv passes on every frame but those a member whose record is gone
// sent (its header's sender; a frame that does not parse goes on, for the
// Framer to count as malformed).
func (g *gate) Recv() (transport.Packet, error) {
	for {
		p, err := g.Transport.Recv()
		if err != nil {
			return p, err
		}
		if h, err := wire.ParseHeader(p.Data); err == nil && g.shut(h.From) {
			continue
		}
		return p, nil
	}
}

// SetPeer passes on to a transport whose peers can move.
func (g *gate) SetPeer(id node.ID, a netip.AddrPort) {
	if m, ok := g.Transport.(transport.Mover); ok {
		m.SetPeer(id, a)
	}
}
