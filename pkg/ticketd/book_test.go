package ticketd

import (
	"encoding/json"
	"net/netip"
	"slices"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/ticket"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// fakeDyn records SetPeer calls.
type fakeDyn struct{ set map[node.ID]netip.AddrPort }

func (f *fakeDyn) SetPeer(id node.ID, a netip.AddrPort)  { f.set[id] = a }
func (f *fakeDyn) SendAddr(netip.AddrPort, []byte) error { return nil }
func newFake() *fakeDyn                                  { return &fakeDyn{set: map[node.ID]netip.AddrPort{}} }
func hdr(from node.ID) wire.Header                       { return wire.Header{From: from} }
func ctl(from node.ID, typ uint8) wire.Header {
	return wire.Header{From: from, Family: wire.FamilyControl, Type: typ}
}
func pkt(a string) transport.Packet { return transport.Packet{Src: netip.MustParseAddrPort(a)} }

// TestBook: the service's book hands frames' sources to the address book
// and the addresses it settles to every slot's transport. A hello is
// answered where it came from and adds nobody; a member's own book, from
// where its frame came, puts it in; a pool of another size is reported.
func TestBook(t *testing.T) {
	f, f2 := newFake(), newFake()
	b := newBook(1, 100, f, 4)
	b.addSlot(1, "127.0.0.1:7001", nil)
	b.seen(ctl(9, ctlHello), pkt("127.0.0.1:7009"))
	if src, _, taken := b.hello(9, 900); taken || src != netip.MustParseAddrPort("127.0.0.1:7009") {
		t.Fatalf("hello: src %v taken %v", src, taken)
	}
	if _, _, taken := b.hello(9, 900); taken {
		t.Fatal("a hello answered twice")
	}
	if len(b.others()) != 0 || f.set[9].IsValid() {
		t.Fatalf("a joiner's hello put it in the book (%v) or moved traffic to it (%v)", b.others(), f.set)
	}
	b.seen(hdr(wire.ClientIDBase+5), pkt("127.0.0.1:1")) // a status client: not a member
	b.seen(ctl(2, ctlBook), pkt("127.0.0.1:7002"))
	v := ticket.BookView{Inc: 200, Tickets: 4, Members: map[node.ID]ticket.BookEntry{3: {Addr: netip.MustParseAddrPort("127.0.0.1:7003"), Inc: 300}}}
	if c, forgotten, _ := b.merge(2, bookMsg{BookView: v}); c != 0 || forgotten {
		t.Fatalf("merge: conflict %d forgotten %v", c, forgotten)
	}
	if got := b.ids(); !slices.Equal(got, []node.ID{1, 2, 3}) {
		t.Fatalf("ids %v, want [1 2 3]", got)
	}
	b.addSlot(1<<24|1, "127.0.0.1:8001", f2)
	if f.set[2] != netip.MustParseAddrPort("127.0.0.1:7002") || f2.set[3] != netip.MustParseAddrPort("127.0.0.1:7003") ||
		f.set[1<<24|1] != netip.MustParseAddrPort("127.0.0.1:8001") {
		t.Fatalf("transports: %v %v", f.set, f2.set)
	}
	if c, _, _ := b.merge(2, bookMsg{BookView: ticket.BookView{Inc: 200, Tickets: 5}}); c != 5 {
		t.Fatalf("a pool of 5 was not reported as a conflict (%d)", c)
	}
	m := b.msg()
	if m.Members[1].Addr != netip.MustParseAddrPort("127.0.0.1:7001") || m.Members[1].Inc != 100 || m.Tickets != 4 {
		t.Fatalf("book sent: %+v", m)
	}
	if addr, ok := b.remove(3, ticket.GoneForgotten, 0); !ok || addr != "127.0.0.1:7003" {
		t.Fatalf("forget 3: %q %v", addr, ok)
	}
	if m := b.msg(); m.Gone[3].Why != ticket.GoneForgotten {
		t.Fatalf("the book sent does not carry the forget: %+v", m.Gone)
	}
}

// FuzzBook: any ctlBook body decodes or is dropped, and merging it never
// makes this member, node.None or a client ID a peer.
func FuzzBook(f *testing.F) {
	f.Add(encodeBook(bookMsg{BookView: ticket.BookView{Inc: 7, Tickets: 4,
		Members: map[node.ID]ticket.BookEntry{2: {Addr: netip.MustParseAddrPort("127.0.0.1:7002"), Inc: 7}}}}))
	f.Add([]byte(`{"tickets":3,"inc":5,"members":{"0":{"addr":"1.2.3.4:5","inc":9},"4294967295":{"addr":"[::1]:9"},"1":{"addr":"127.0.0.1:1"}},"gone":{"1":{"inc":99,"why":2}}}`))
	f.Add([]byte(`{"members":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var m bookMsg
		if json.Unmarshal(body, &m) != nil {
			return
		}
		fk := newFake()
		b := newBook(1, 10, fk, 0)
		b.seen(ctl(2, ctlBook), pkt("127.0.0.1:7002"))
		b.merge(2, m)
		for _, id := range b.others() {
			if id == 1 || id == node.None || id >= wire.ClientIDBase {
				t.Fatalf("merged a book that makes %d a peer", id)
			}
		}
		_ = b.msg()
	})
}
