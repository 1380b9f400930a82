package ticketd

import (
	"encoding/json"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"

	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Control frames ticketd sends between members (wire.FamilyControl, from
// driver.ControlTool up). Append only.
const (
	// ctlHello introduces a new member to an address (--join) whose ID it
	// does not know: the frame is addressed to wire.Anyone. The answer is
	// ctlBook.
	ctlHello = driver.ControlTool + iota
	// ctlBook carries the sender's address book and the pool's size.
	ctlBook
	// ctlWant: the sender has a client waiting and no ticket.
	ctlWant
)

// Control frames of refounding (refound.go), above the gossip's.
const (
	ctlProbe = ctlGossip + 16 + iota
	ctlProbeAnswer
)

// bookMsg is ctlBook's body (and ctlHello's, with the tickets the sender
// was started with, if any).
type bookMsg struct {
	Tickets uint32            `json:"tickets,omitempty"`
	Peers   map[string]string `json:"peers,omitempty"` // ID → host:port
}

// book is the member's address book: which address each member ID has.
// The machine names members by ID and reaches them through it. Addresses
// come from authenticated frames (where a member's frames come from) and
// from other members' books (for members not heard from yet): what a
// frame shows wins over what a book says.
type book struct {
	self node.ID // the member's ID (its first slot's)

	mu       sync.Mutex
	trs      []transport.Dynamic // every slot's transport learns every address
	mine     map[node.ID]string  // this member's slots and their addresses
	addrs    map[node.ID]netip.AddrPort
	observed map[node.ID]bool
	n        uint32 // the pool's size, once known
}

func newBook(self node.ID, tr transport.Dynamic, n uint32) *book {
	return &book{self: self, trs: []transport.Dynamic{tr}, mine: map[node.ID]string{}, addrs: map[node.ID]netip.AddrPort{},
		observed: map[node.ID]bool{}, n: n}
}

// addSlot registers one of this member's slots: its address goes in the
// books this member sends, and its transport learns every address known
// (the member's other slots' too, since slots talk to each other).
func (b *book) addSlot(id node.ID, addr string, tr transport.Dynamic) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mine[id] = addr
	ap, err := netip.ParseAddrPort(addr)
	if tr != nil {
		b.trs = append(b.trs, tr)
		for o, a := range b.addrs {
			tr.SetPeer(o, a)
		}
	}
	if err == nil {
		b.addrs[id], b.observed[id] = ap, true
		for _, t := range b.trs {
			t.SetPeer(id, ap)
		}
	}
}

func (b *book) setPeer(id node.ID, a netip.AddrPort) {
	for _, t := range b.trs {
		t.SetPeer(id, a)
	}
}

// seen learns a member's address from a frame the Framer accepted.
func (b *book) seen(h wire.Header, p transport.Packet) {
	if h.From == b.self || h.From == node.None || h.From >= wire.ClientIDBase || !p.Src.IsValid() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, own := b.mine[h.From]; own {
		return
	}
	if old, ok := b.addrs[h.From]; !ok || old != p.Src || !b.observed[h.From] {
		b.addrs[h.From], b.observed[h.From] = p.Src, true
		b.setPeer(h.From, p.Src)
	}
}

// merge learns what another member's book says, for members not known.
// It reports a conflicting pool size (the books disagree on n).
func (b *book) merge(m bookMsg) (conflict uint32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.Tickets != 0 {
		if b.n == 0 {
			b.n = m.Tickets
		} else if b.n != m.Tickets {
			return m.Tickets
		}
	}
	for k, v := range m.Peers {
		id, err := node.ParseID(k)
		if err != nil || id == b.self || id >= wire.ClientIDBase {
			continue
		}
		a, err := netip.ParseAddrPort(v)
		if err != nil {
			continue
		}
		if _, own := b.mine[id]; own {
			continue
		}
		if _, ok := b.addrs[id]; !ok {
			b.addrs[id] = a
			b.setPeer(id, a)
		}
	}
	return 0
}

// msg is this member's book, to send (with its own address).
func (b *book) msg(selfAddr string) bookMsg {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := bookMsg{Tickets: b.n, Peers: map[string]string{}}
	for id, a := range b.addrs {
		m.Peers[strconv.FormatUint(uint64(id), 10)] = a.String()
	}
	own := map[node.ID]string{b.self: selfAddr}
	for id, a := range b.mine {
		own[id] = a
	}
	for id, a := range own {
		if ap, err := netip.ParseAddrPort(a); err == nil && !ap.Addr().IsUnspecified() {
			m.Peers[id.String()] = a
		}
	}
	return m
}

// ids are the processes known (other members' slots and this member's
// other slots), in order.
func (b *book) ids() []node.ID {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Sorted(maps.Keys(b.addrs))
}

// others are the processes of other members.
func (b *book) others() []node.ID {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []node.ID
	for id := range b.addrs {
		if _, own := b.mine[id]; !own && id != b.self {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (b *book) size() uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func (b *book) setSize(n uint32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == 0 {
		b.n = n
	}
}

// resolve turns --join's host:port into addresses.
func resolve(addrs []string) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, a := range addrs {
		ua, err := net.ResolveUDPAddr("udp", a)
		if err != nil {
			return nil, err
		}
		out = append(out, ua.AddrPort())
	}
	return out, nil
}

func encodeBook(m bookMsg) []byte { b, _ := json.Marshal(m); return b }
