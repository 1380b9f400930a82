package transport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Packet is one received frame.
type Packet struct {
	Data []byte
	// Reply sends a frame back along the path this packet came by. It lets
	// a node answer a process that is not in its peer list, such as a
	// short-lived status client.
	Reply func(frame []byte) error
	// Src is the address the frame came from (zero where the transport
	// has none, such as the in-memory network).
	Src netip.AddrPort
}

// Transport sends frames to peers by ID and receives frames from anyone.
type Transport interface {
	// Send transmits a frame to a peer. Delivery is best effort.
	Send(to node.ID, frame []byte) error
	// Recv blocks until a frame arrives or the transport is closed, in
	// which case it returns net.ErrClosed.
	Recv() (Packet, error)
	// Addr is the local address the transport listens on.
	Addr() string
	Close() error
}

// ErrUnknownPeer is returned by Send for an ID without an address.
var ErrUnknownPeer = errors.New("transport: unknown peer")

// UDP is a Transport over one UDP socket. Each frame is one datagram.
type UDP struct {
	conn  *net.UDPConn
	pmu   sync.RWMutex // guards peers: SetPeer may run beside Send
	peers map[node.ID]netip.AddrPort

	raw  *rawUDP    // nil: through conn
	rmu  sync.Mutex // Recv's buffer, reused from datagram to datagram
	rbuf []byte
}

// ListenUDP binds addr and resolves every peer address.
func ListenUDP(addr string, peers map[node.ID]string) (*UDP, error) {
	la, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: bind %q: %w", addr, err)
	}
	t := &UDP{peers: map[node.ID]netip.AddrPort{}}
	for id, a := range peers {
		ra, err := net.ResolveUDPAddr("udp", a)
		if err != nil {
			return nil, fmt.Errorf("transport: peer %d address %q: %w", id, a, err)
		}
		t.peers[id] = ra.AddrPort()
	}
	if t.conn, err = net.ListenUDP("udp", la); err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	// Bursts of heartbeats and status answers must not be lost to a small
	// default socket buffer.
	_ = t.conn.SetReadBuffer(1 << 20)
	if rc, err := t.conn.SyscallConn(); err == nil {
		t.raw = newRawUDP(rc)
	}
	return t, nil
}

// sendTo sends raw where it can, and through net for what raw does not
// encode (scoped IPv6 peers).
func (t *UDP) sendTo(frame []byte, to netip.AddrPort) error {
	if t.raw != nil {
		if err := t.raw.sendTo(frame, to); err != errAddrFamily {
			return err
		}
	}
	_, err := t.conn.WriteToUDPAddrPort(frame, to)
	return err
}

func (t *UDP) Send(to node.ID, frame []byte) error {
	t.pmu.RLock()
	a, ok := t.peers[to]
	t.pmu.RUnlock()
	if !ok {
		return fmt.Errorf("%w %d", ErrUnknownPeer, to)
	}
	return t.sendTo(frame, a)
}

// SetPeer adds a peer or moves it to a new address: for tools whose
// membership is learnt as they run rather than listed up front.
func (t *UDP) SetPeer(id node.ID, a netip.AddrPort) {
	t.pmu.Lock()
	t.peers[id] = a
	t.pmu.Unlock()
}

// SendAddr sends a frame to an address rather than a peer: a first
// contact whose ID is not known yet.
func (t *UDP) SendAddr(a netip.AddrPort, frame []byte) error { return t.sendTo(frame, a) }

// Recv reads into one buffer kept for the transport's life and returns a
// copy of the datagram: a fresh 64 KiB buffer per datagram was 64 KiB to
// zero and collect for every frame of a few dozen bytes.
func (t *UDP) Recv() (Packet, error) {
	t.rmu.Lock()
	defer t.rmu.Unlock()
	if t.rbuf == nil {
		t.rbuf = make([]byte, 64*1024)
	}
	buf := t.rbuf
	for {
		var n int
		var from netip.AddrPort
		var err error
		if t.raw != nil {
			n, from, err = t.raw.recvFrom(buf)
		} else {
			n, from, err = t.conn.ReadFromUDPAddrPort(buf)
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return Packet{}, net.ErrClosed
			}
			// ICMP port-unreachable from a dead peer surfaces here on
			// some systems; it is not fatal for a datagram socket.
			continue
		}
		data := append([]byte(nil), buf[:n]...)
		return Packet{Data: data, Src: from, Reply: func(f []byte) error {
			return t.sendTo(f, from)
		}}, nil
	}
}

func (t *UDP) Addr() string { return t.conn.LocalAddr().String() }
func (t *UDP) Close() error { return t.conn.Close() }

// Network is an in-memory network: a set of endpoints that deliver frames
// to each other through buffered channels. It is a first-class transport for
// tests and examples, not a mock.
type Network struct {
	mu  sync.Mutex
	eps map[node.ID]*Endpoint
}

// NewNetwork returns an empty in-memory network.
func NewNetwork() *Network { return &Network{eps: map[node.ID]*Endpoint{}} }

// Endpoint is one process's attachment to a Network.
type Endpoint struct {
	net    *Network
	id     node.ID
	in     chan Packet
	once   sync.Once
	closed chan struct{}
}

// Endpoint attaches id to the network, replacing any earlier endpoint.
func (n *Network) Endpoint(id node.ID) *Endpoint {
	e := &Endpoint{net: n, id: id, in: make(chan Packet, 4096), closed: make(chan struct{})}
	n.mu.Lock()
	n.eps[id] = e
	n.mu.Unlock()
	return e
}

func (e *Endpoint) Send(to node.ID, frame []byte) error {
	e.net.mu.Lock()
	dst := e.net.eps[to]
	e.net.mu.Unlock()
	if dst == nil {
		return fmt.Errorf("%w %d", ErrUnknownPeer, to)
	}
	from := e.id
	p := Packet{Data: append([]byte(nil), frame...), Reply: func(f []byte) error { return dst.Send(from, f) }}
	select {
	case <-dst.closed:
	case dst.in <- p:
	default: // a full queue drops, as a real socket buffer would
	}
	return nil
}

func (e *Endpoint) Recv() (Packet, error) {
	select {
	case p := <-e.in:
		return p, nil
	case <-e.closed:
		return Packet{}, net.ErrClosed
	}
}

func (e *Endpoint) Addr() string { return fmt.Sprintf("mem:%d", e.id) }

func (e *Endpoint) Close() error {
	e.once.Do(func() {
		close(e.closed)
		e.net.mu.Lock()
		if e.net.eps[e.id] == e {
			delete(e.net.eps, e.id)
		}
		e.net.mu.Unlock()
	})
	return nil
}
