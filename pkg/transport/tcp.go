package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/rawio"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// TCP is a Transport over TCP streams carrying length-prefixed frames. It
// dials each peer lazily, keeps the connection, and redials after an error.
type TCP struct {
	ln    net.Listener
	peers map[node.ID]string // guarded by mu: SetPeer may run beside Send
	in    chan Packet
	done  chan struct{}
	once  sync.Once

	mu      sync.Mutex
	out     map[node.ID]*tcpConn
	conns   map[*tcpConn]struct{}
	inbound int       // accepted connections open
	limits  tcpLimits // fixed at start

	// AcceptErrors counts failed accepts (each retried after a pause);
	// Refused counts connections closed at once for passing maxInbound.
	AcceptErrors, Refused atomic.Uint64
	// DialTimeout bounds each connection attempt (default 500ms).
	DialTimeout time.Duration
}

type tcpConn struct {
	mu      sync.Mutex
	c       net.Conn
	rw      io.ReadWriter // c, or raw I/O on c's descriptor (package rawio)
	inbound bool          // accepted, not dialled: its peer is unknown until a frame opens
}

func newTCPConn(c net.Conn) *tcpConn {
	tc := &tcpConn{c: c, rw: c}
	if r := rawio.NewStream(c); r != nil {
		tc.rw = r
	}
	return tc
}

func (c *tcpConn) write(frame []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	return wire.WriteFrame(c.rw, frame)
}

// ListenTCP listens on addr; peers maps IDs to dialable addresses.
func ListenTCP(addr string, peers map[node.ID]string) (*TCP, error) {
	return listenTCP(addr, peers, defaultLimits)
}

func listenTCP(addr string, peers map[node.ID]string, limits tcpLimits) (*TCP, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	t := &TCP{ln: ln, peers: maps.Clone(peers), limits: limits, in: make(chan Packet, 4096), done: make(chan struct{}),
		out: map[node.ID]*tcpConn{}, conns: map[*tcpConn]struct{}{}}
	go t.accept()
	return t, nil
}

func (t *TCP) track(c *tcpConn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed() {
		return false
	}
	if c.inbound {
		if t.inbound >= t.limits.maxInbound {
			t.Refused.Add(1)
			return false
		}
		t.inbound++
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *TCP) forget(c *tcpConn) {
	c.c.Close()
	t.mu.Lock()
	if _, ok := t.conns[c]; ok && c.inbound {
		t.inbound--
	}
	delete(t.conns, c)
	for id, o := range t.out {
		if o == c {
			delete(t.out, id)
		}
	}
	t.mu.Unlock()
}

// tcpLimits bound what unauthenticated peers can hold of a TCP member: the
// inbound connections open at once, how long an accepted connection may
// stay silent before its first frame, and how long one frame may take once
// it has begun. Each transport keeps its own copy, fixed when it starts.
type tcpLimits struct {
	maxInbound   int
	firstFrame   time.Duration
	frameArrives time.Duration
}

var defaultLimits = tcpLimits{maxInbound: 512, firstFrame: 5 * time.Second, frameArrives: 5 * time.Second}

func (t *TCP) accept() {
	var backoff time.Duration
	for {
		c, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors (EMFILE) or another passing failure: wait
			// and accept again, as net/http does, never give up listening.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t.AcceptErrors.Add(1)
			select {
			case <-time.After(backoff):
			case <-t.done:
				return
			}
			continue
		}
		backoff = 0
		tc := newTCPConn(c)
		tc.inbound = true
		if !t.track(tc) {
			c.Close()
			if t.closed() {
				return
			}
			continue
		}
		go t.read(tc)
	}
}

func (t *TCP) closed() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func (t *TCP) read(c *tcpConn) {
	defer t.forget(c)
	// Buffered: a frame's length and body (and often the next frames)
	// come in one read instead of two or more.
	br := bufio.NewReader(c.rw)
	var idle time.Time // no limit between frames, but before an accepted connection's first
	if c.inbound {
		idle = time.Now().Add(t.limits.firstFrame)
	}
	for {
		// A frame may be long in coming, but once begun it must arrive
		// whole within frameArrives: a peer cannot hold buffers open with
		// half-sent frames.
		_ = c.c.SetReadDeadline(idle)
		if _, err := br.Peek(1); err != nil {
			return
		}
		_ = c.c.SetReadDeadline(time.Now().Add(t.limits.frameArrives))
		f, err := wire.ReadFrame(br)
		if err != nil {
			return
		}
		idle = time.Time{}
		select {
		case t.in <- Packet{Data: f, Reply: c.write}:
		case <-t.done:
			return
		}
	}
}

// SetPeer moves a peer to a new address: the connection dialled to the
// old one is closed, and the next frame to the peer dials the new one.
func (t *TCP) SetPeer(id node.ID, a netip.AddrPort) {
	t.mu.Lock()
	t.peers[id] = a.String()
	c := t.out[id]
	t.mu.Unlock()
	if c != nil {
		t.forget(c)
	}
}

func (t *TCP) Send(to node.ID, frame []byte) error {
	t.mu.Lock()
	addr, ok := t.peers[to]
	c := t.out[to]
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w %d", ErrUnknownPeer, to)
	}
	if c == nil {
		d := t.DialTimeout
		if d == 0 {
			d = 500 * time.Millisecond
		}
		nc, err := net.DialTimeout("tcp", addr, d)
		if err != nil {
			return err
		}
		c = newTCPConn(nc)
		if !t.track(c) {
			nc.Close()
			return net.ErrClosed
		}
		t.mu.Lock()
		t.out[to] = c
		t.mu.Unlock()
		// Peers may answer on the connection we opened.
		go t.read(c)
	}
	if err := c.write(frame); err != nil {
		t.forget(c)
		return err
	}
	return nil
}

func (t *TCP) Recv() (Packet, error) {
	select {
	case p := <-t.in:
		return p, nil
	case <-t.done:
		return Packet{}, net.ErrClosed
	}
}

func (t *TCP) Addr() string { return t.ln.Addr().String() }

func (t *TCP) Close() error {
	var err error
	t.once.Do(func() {
		t.mu.Lock()
		close(t.done)
		for c := range t.conns {
			c.c.Close()
		}
		t.mu.Unlock()
		err = t.ln.Close()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
	})
	return err
}
