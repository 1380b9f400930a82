package ticketd

import (
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// fakeDyn records SetPeer calls.
type fakeDyn struct{ set map[node.ID]netip.AddrPort }

func (f *fakeDyn) SetPeer(id node.ID, a netip.AddrPort)  { f.set[id] = a }
func (f *fakeDyn) SendAddr(netip.AddrPort, []byte) error { return nil }
func newFake() *fakeDyn                                  { return &fakeDyn{set: map[node.ID]netip.AddrPort{}} }
func hdr(from node.ID) wire.Header                       { return wire.Header{From: from} }
func pkt(a string) transport.Packet                      { return transport.Packet{Src: netip.MustParseAddrPort(a)} }

// TestBook: frames teach addresses and win over books; books fill in the
// rest; nobody can make a member forget or move itself, or a client ID
// a member; a pool of another size is reported, not merged.
func TestBook(t *testing.T) {
	f := newFake()
	b := newBook(1, f, 0)
	b.seen(hdr(2), pkt("127.0.0.1:7002"))
	b.seen(hdr(1), pkt("127.0.0.1:9999"))                // itself: ignored
	b.seen(hdr(wire.ClientIDBase+5), pkt("127.0.0.1:1")) // a status client: not a member
	if c := b.merge(bookMsg{Tickets: 4, Peers: map[string]string{"2": "10.0.0.2:1", "3": "127.0.0.1:7003", "1": "10.9.9.9:1", "x": "y"}}); c != 0 {
		t.Fatalf("conflict %d on the first book", c)
	}
	if got := b.ids(); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("ids %v, want [2 3]", got)
	}
	if f.set[2] != netip.MustParseAddrPort("127.0.0.1:7002") {
		t.Fatalf("a book moved member 2 away from where its frames come from: %v", f.set[2])
	}
	if b.size() != 4 {
		t.Fatalf("size %d, want 4", b.size())
	}
	if c := b.merge(bookMsg{Tickets: 5}); c != 5 {
		t.Fatalf("a pool of 5 was not reported as a conflict (%d)", c)
	}
	b.seen(hdr(3), pkt("127.0.0.1:8003")) // 3 restarted elsewhere: frames win
	if f.set[3] != netip.MustParseAddrPort("127.0.0.1:8003") {
		t.Fatalf("member 3's new address not taken: %v", f.set[3])
	}
	m := b.msg("127.0.0.1:7001")
	if m.Peers["1"] != "127.0.0.1:7001" || m.Peers["3"] != "127.0.0.1:8003" || m.Tickets != 4 {
		t.Fatalf("book sent: %+v", m)
	}
}

// FuzzBook: any ctlBook body decodes or is dropped, and merging it never
// makes this member, node.None or a client ID a peer.
func FuzzBook(f *testing.F) {
	f.Add(encodeBook(bookMsg{Tickets: 4, Peers: map[string]string{"2": "127.0.0.1:7002"}}))
	f.Add([]byte(`{"tickets":3,"peers":{"0":"1.2.3.4:5","4294967295":"[::1]:9","1":"127.0.0.1:1"}}`))
	f.Add([]byte(`{"peers":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var m bookMsg
		if json.Unmarshal(body, &m) != nil {
			return
		}
		fk := newFake()
		b := newBook(1, fk, 0)
		b.merge(m)
		for _, id := range b.ids() {
			if id == 1 || id == node.None || id >= wire.ClientIDBase {
				t.Fatalf("merged a book that makes %d a peer", id)
			}
		}
		_ = b.msg("127.0.0.1:1")
	})
}
