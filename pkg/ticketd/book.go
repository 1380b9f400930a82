package ticketd

import (
	"encoding/json"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/ticket"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Control frames ticketd sends between members (wire.FamilyControl, from
// driver.ControlTool up). Append only.
const (
	// ctlHello introduces a new member to an address (--join) whose ID it
	// does not know: the frame is addressed to wire.Anyone. The answer is
	// ctlBook, sent to where the hello came from.
	ctlHello = driver.ControlTool + iota
	// ctlBook carries the sender's address book and the pool's size.
	ctlBook
	// ctlWant: the sender has a client waiting and no ticket.
	ctlWant
	// ctlLeave: the sender (the incarnation in the body) is stopping and
	// leaves the book.
	ctlLeave
)

// Control types from ctlWant+17 up were PrCast's and refounding's, which
// now travel as ticket messages (ticket.Member); they are not reused.

// bookMsg is ctlBook's body, ctlHello's (the joiner's incarnation only)
// and ctlLeave's (the leaver's incarnation only).
type bookMsg struct {
	ticket.BookView
	// Held, in the answer to a hello: the joiner's ID belongs to the
	// member at this address.
	Held string `json:"held,omitempty"`
}

// holdFor: a member heard from this recently holds its ID against a
// joiner (and its address against frames from elsewhere); the members'
// books go round every second.
const holdFor = 3 * time.Second

// book is the member's address book (ticket.AddressBook decides who is on
// it) and the transports that learn its addresses.
type book struct {
	self node.ID

	mu   sync.Mutex
	ab   *ticket.AddressBook
	trs  []transport.Dynamic        // every slot's transport learns every address
	srcs map[node.ID]netip.AddrPort // where the last hello or book from each ID came from
}

func newBook(self node.ID, inc uint64, tr transport.Dynamic, n uint32) *book {
	return &book{self: self, ab: ticket.NewAddressBook(self, inc, n, holdFor), trs: []transport.Dynamic{tr},
		srcs: map[node.ID]netip.AddrPort{}}
}

// addSlot registers one of this member's slots: its address goes in the
// books this member sends, and its transport learns every address known
// (the member's other slots' too, since slots talk to each other).
func (b *book) addSlot(id node.ID, addr string, tr transport.Dynamic) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ap, _ := netip.ParseAddrPort(addr)
	b.ab.AddSlot(id, ap)
	if tr != nil {
		b.trs = append(b.trs, tr)
		for o, a := range b.ab.Addrs() {
			tr.SetPeer(o, a)
		}
	}
	if ap.IsValid() {
		b.setPeer(id, ap)
	}
}

func (b *book) setPeer(id node.ID, a netip.AddrPort) {
	for _, t := range b.trs {
		t.SetPeer(id, a)
	}
}

// seen learns a member's address from a frame the Framer accepted, and
// where a hello or a book came from (the driver hands the frame to
// control next, on the same goroutine).
func (b *book) seen(h wire.Header, p transport.Packet) {
	if h.From >= wire.ClientIDBase || !p.Src.IsValid() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.Family == wire.FamilyControl && (h.Type == ctlHello || h.Type == ctlBook) {
		if len(b.srcs) > 64 {
			clear(b.srcs)
		}
		b.srcs[h.From] = p.Src
		if h.Type == ctlHello {
			return // a joiner: nobody's traffic moves to it
		}
	}
	if b.ab.Observe(h.From, p.Src, time.Now()) {
		b.setPeer(h.From, p.Src)
	}
}

// hello checks a joiner's ID and says where its hello came from.
func (b *book) hello(id node.ID, inc uint64) (src netip.AddrPort, holder string, taken bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	src = b.srcs[id]
	delete(b.srcs, id)
	if !src.IsValid() {
		return src, "", false
	}
	h, taken := b.ab.Hello(id, src, inc, time.Now())
	if taken {
		holder = h.String()
		if !h.IsValid() {
			holder = "this member"
		}
	}
	return src, holder, taken
}

// merge learns what another member's book says. It reports a conflicting
// pool size (the books disagree on n), whether the book says this member
// was forgotten, and where to send this member's book when the sender is
// struck off it and must hear of its tomb (ticket.AddressBook.Buried).
func (b *book) merge(from node.ID, m bookMsg) (conflict uint32, forgotten bool, tell netip.AddrPort) {
	b.mu.Lock()
	defer b.mu.Unlock()
	src := b.srcs[from]
	delete(b.srcs, from)
	if b.ab.Buried(from, m.Inc) {
		tell = src
	}
	set, conflict, forgotten := b.ab.Merge(from, src, m.BookView, time.Now())
	for id, a := range set {
		b.setPeer(id, a)
	}
	return conflict, forgotten, tell
}

// excluded are the members struck off as excluded within the last d.
func (b *book) excluded(now time.Time, d time.Duration) []node.ID {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ab.Excluded(now, d)
}

// exclude strikes off the members of processes the core excluded
// (ticket.AddressBook.Exclude).
func (b *book) exclude(ids []node.ID) []node.ID {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ab.Exclude(ids, time.Now())
}

// remove strikes member m off the book (ticket.AddressBook.Remove).
func (b *book) remove(m node.ID, why ticket.Gone, inc uint64) (addr string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, _ := b.ab.Addr(m)
	_, ok = b.ab.Remove(m, why, inc, time.Now())
	return a.String(), ok
}

// msg is this member's book, to send.
func (b *book) msg() bookMsg {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bookMsg{BookView: b.ab.View()}
}

// gone are the members struck off, and why (for status).
func (b *book) gone() map[node.ID]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[node.ID]string{}
	for id, t := range b.ab.View().Gone {
		out[id] = t.Why.String()
	}
	return out
}

func (b *book) inc() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ab.Inc()
}

func (b *book) addr(id node.ID) (netip.AddrPort, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ab.Addr(id)
}

// ids are the processes known (other members' slots and this member's
// other slots), in order.
func (b *book) ids() []node.ID {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ab.IDs()
}

// others are the processes of other members.
func (b *book) others() []node.ID {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ab.Others()
}

func (b *book) size() uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ab.Size()
}

func (b *book) setSize(n uint32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ab.SetSize(n)
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

// admit tells another slot when slot 0's founding lets other members'
// processes in (ticket.MsgAdmit): until then it serves no other member's
// CJOIN, as slot 0 does.
func (d *daemon) admit(s *slot) {
	if u := d.slots[0].mc.admitFrom; !u.IsZero() && u.After(time.Now()) {
		d.tell(s, ticket.Msg{Type: ticket.MsgAdmit, Attempt: uint64(u.UnixNano())})
	}
}
