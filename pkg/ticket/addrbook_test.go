package ticket

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

var t0 = time.Unix(1_700_000_000, 0)

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// member is a book as member id, incarnation inc, at addr, would keep it.
func member(id node.ID, inc uint64, addr string, n uint32) *AddressBook {
	b := NewAddressBook(id, inc, n, 3*time.Second)
	b.AddSlot(id, ap(addr))
	return b
}

// TestAddressBookJoiner: a joiner's hello and frames add nobody (a joiner
// refused for its --tickets never enters the book); it enters when it
// speaks for itself with its own book, and then its slots' frames add them.
func TestAddressBookJoiner(t *testing.T) {
	b := member(1, 10, "127.0.0.1:7001", 4)
	j := member(9, 90, "127.0.0.1:7009", 0)
	if _, taken := b.Hello(9, ap("127.0.0.1:7009"), 90, t0); taken {
		t.Fatal("a new ID was refused")
	}
	if !b.Observe(9, ap("127.0.0.1:7009"), t0) {
		t.Fatal("the transport may not answer a joiner")
	}
	if got := b.Others(); len(got) != 0 {
		t.Fatalf("a joiner that has not accepted the pool is in the book: %v", got)
	}
	b.Observe(1<<24|9, ap("127.0.0.1:8009"), t0) // a slot of a member not in the book
	if got := b.Others(); len(got) != 0 {
		t.Fatalf("a slot of an unknown member is in the book: %v", got)
	}
	// The joiner learns the pool from the answer.
	if _, c, _ := j.Merge(1, netip.AddrPort{}, b.View(), t0); c != 0 || j.Size() != 4 || !slices.Equal(j.Members(), []node.ID{1}) {
		t.Fatalf("the joiner's book after the answer: size %d members %v conflict %d", j.Size(), j.Members(), c)
	}
	// It accepted the pool: its own book puts it in.
	set, _, _ := b.Merge(9, netip.AddrPort{}, j.View(), t0)
	if !slices.Equal(b.Members(), []node.ID{9}) || set[9] != ap("127.0.0.1:7009") {
		t.Fatalf("after the joiner's own book: members %v, set %v", b.Members(), set)
	}
	b.Observe(1<<24|9, ap("127.0.0.1:8009"), t0)
	if got := b.Others(); !slices.Equal(got, []node.ID{9, 1<<24 | 9}) {
		t.Fatalf("a known member's new slot is not in the book: %v", got)
	}
}

// TestAddressBookHeldID: a joiner with an ID another live member holds is
// refused, naming the holder; the member's own ID is its own; a restart
// at the same address, or after the holder fell silent, is not refused.
func TestAddressBookHeldID(t *testing.T) {
	b := member(1, 10, "127.0.0.1:7001", 4)
	b.Merge(2, ap("127.0.0.1:7002"), member(2, 20, "127.0.0.1:7002", 4).View(), t0)
	if h, taken := b.Hello(2, ap("127.0.0.1:9999"), 99, t0.Add(time.Second)); !taken || h != ap("127.0.0.1:7002") {
		t.Fatalf("a second member 2 was not refused (%v %v)", h, taken)
	}
	if h, taken := b.Hello(1, ap("127.0.0.1:9999"), 99, t0); !taken || h != ap("127.0.0.1:7001") {
		t.Fatalf("a joiner with this member's ID was not refused (%v %v)", h, taken)
	}
	if _, taken := b.Hello(2, ap("127.0.0.1:7002"), 99, t0.Add(time.Second)); taken {
		t.Fatal("a restart at the holder's own address was refused")
	}
	if _, taken := b.Hello(2, ap("127.0.0.1:9999"), 99, t0.Add(4*time.Second)); taken {
		t.Fatal("a member silent longer than live still holds its ID")
	}
	// Frames from a second process under ID 2 do not take its traffic
	// while it is live; after it fell silent they do (a restart elsewhere).
	if b.Observe(2, ap("127.0.0.1:9999"), t0.Add(time.Second)) {
		t.Fatal("a live member's traffic moved to another process under its ID")
	}
	if !b.Observe(2, ap("127.0.0.1:9999"), t0.Add(5*time.Second)) {
		t.Fatal("a silent member's restart elsewhere was not taken")
	}
}

// TestAddressBookLeave: a member that left is struck off; the tomb travels
// in the book, so older books gossiped later do not bring it back, at this
// member or at one that heard of the leave only through the gossip; a new
// incarnation of it (a restart that joins) comes back.
func TestAddressBookLeave(t *testing.T) {
	b1 := member(1, 10, "127.0.0.1:7001", 4)
	b2 := member(2, 20, "127.0.0.1:7002", 4)
	b3 := member(3, 30, "127.0.0.1:7003", 4)
	old3 := b3.View()
	for _, b := range []*AddressBook{b1, b2} {
		b.Merge(3, netip.AddrPort{}, old3, t0)
	}
	b1.Merge(2, netip.AddrPort{}, b2.View(), t0)
	b2.Merge(1, netip.AddrPort{}, b1.View(), t0)
	stale := b2.View() // lists 3
	if _, ok := b1.Remove(3, GoneLeft, 29, t0); ok {
		t.Fatal("a leave of an older incarnation struck off the newer")
	}
	if tb, ok := b1.Remove(3, GoneLeft, 30, t0); !ok || tb != (Tomb{Inc: 30, Why: GoneLeft}) {
		t.Fatalf("leave: %v %v", tb, ok)
	}
	b1.Merge(2, netip.AddrPort{}, stale, t0.Add(time.Second))
	b1.Merge(3, netip.AddrPort{}, old3, t0.Add(time.Second)) // its own last book, late
	if slices.Contains(b1.Members(), 3) {
		t.Fatal("an older book brought back a member that left")
	}
	// Member 2 missed the leave: member 1's book tells it.
	b2.Merge(1, netip.AddrPort{}, b1.View(), t0.Add(time.Second))
	if !slices.Equal(b2.Members(), []node.ID{1}) {
		t.Fatalf("member 2's book after member 1's: %v", b2.Members())
	}
	b2.Merge(1, netip.AddrPort{}, stale, t0.Add(time.Second))
	if slices.Contains(b2.Members(), 3) {
		t.Fatal("gossip of an older book brought back a member that left")
	}
	// Member 3 starts again and joins: a newer incarnation.
	b1.Merge(3, netip.AddrPort{}, member(3, 31, "127.0.0.1:7003", 0).View(), t0.Add(2*time.Second))
	b2.Merge(1, netip.AddrPort{}, b1.View(), t0.Add(2*time.Second))
	if !slices.Contains(b1.Members(), 3) || !slices.Contains(b2.Members(), 3) {
		t.Fatalf("the new incarnation of 3 is not back: %v %v", b1.Members(), b2.Members())
	}
	if _, ok := b1.Remove(7, GoneLeft, 1, t0); ok {
		t.Fatal("a member not in the book was struck off")
	}
	if _, ok := b1.Remove(1, GoneForgotten, 0, t0); ok {
		t.Fatal("a member struck itself off")
	}
}

// TestAddressBookForget: a forgotten member stays out pool-wide, whatever
// it or older books say, and learns it was forgotten; it comes back only
// as a new incarnation. An excluded member that is alive speaks on as its
// next incarnation, which every book takes over the tomb.
func TestAddressBookForget(t *testing.T) {
	b1 := member(1, 10, "127.0.0.1:7001", 4)
	b2 := member(2, 20, "127.0.0.1:7002", 4)
	b3 := member(3, 30, "127.0.0.1:7003", 4)
	b1.Merge(3, netip.AddrPort{}, b3.View(), t0)
	b2.Merge(3, netip.AddrPort{}, b3.View(), t0)
	if _, ok := b1.Remove(3, GoneForgotten, 0, t0); !ok {
		t.Fatal("forget 3 failed")
	}
	b2.Merge(1, netip.AddrPort{}, b1.View(), t0)
	b2.Merge(3, netip.AddrPort{}, b3.View(), t0) // 3 still runs and gossips
	if slices.Contains(b2.Members(), 3) || slices.Contains(b1.Members(), 3) {
		t.Fatalf("a forgotten member came back by its own old word: %v %v", b1.Members(), b2.Members())
	}
	if _, _, forgotten := b3.Merge(1, netip.AddrPort{}, b1.View(), t0); !forgotten {
		t.Fatal("the forgotten member was not told")
	}
	if _, _, forgotten := b2.Merge(1, netip.AddrPort{}, b1.View(), t0); forgotten {
		t.Fatal("a member not forgotten was told it was")
	}

	// Exclusion: 2 is struck off while alive; it hears of it and speaks on
	// as incarnation 21, which 1 takes.
	b1.Merge(2, netip.AddrPort{}, b2.View(), t0)
	if _, ok := b1.Remove(2, GoneExcluded, 0, t0); !ok {
		t.Fatal("exclude 2 failed")
	}
	b1.Merge(2, netip.AddrPort{}, b2.View(), t0) // its book from before it knew
	if slices.Contains(b1.Members(), 2) {
		t.Fatal("an excluded member's older book brought it back")
	}
	if _, _, forgotten := b2.Merge(1, netip.AddrPort{}, b1.View(), t0); forgotten || b2.Inc() != 21 {
		t.Fatalf("the excluded member: forgotten %v, incarnation %d, want 21", forgotten, b2.Inc())
	}
	b1.Merge(2, netip.AddrPort{}, b2.View(), t0)
	if !slices.Contains(b1.Members(), 2) {
		t.Fatal("an excluded member that is alive did not come back")
	}
}

// TestAddressBookSize: a book of another pool size is reported and not
// merged; no book makes this member, node.None or a client ID a peer, or
// moves a process away from where its frames come from.
func TestAddressBookSize(t *testing.T) {
	b := member(1, 10, "127.0.0.1:7001", 4)
	b.Observe(2, ap("127.0.0.1:7002"), t0) // not a member yet: nothing
	b.Merge(2, ap("127.0.0.1:7002"), member(2, 20, "127.0.0.1:7002", 4).View(), t0)
	if _, c, _ := b.Merge(3, netip.AddrPort{}, member(3, 30, "127.0.0.1:7003", 5).View(), t0); c != 5 || slices.Contains(b.Members(), 3) {
		t.Fatalf("a pool of 5: conflict %d, members %v", c, b.Members())
	}
	v := BookView{Tickets: 4, Members: map[node.ID]BookEntry{
		1: {Addr: ap("10.9.9.9:1"), Inc: 99}, node.None: {Addr: ap("10.0.0.1:1"), Inc: 1},
		wire.ClientIDBase + 5: {Addr: ap("10.0.0.1:2"), Inc: 1}, 1<<24 | 1: {Addr: ap("10.0.0.1:3"), Inc: 99},
		2: {Addr: ap("10.0.0.2:1"), Inc: 20},
	}}
	b.Merge(4, netip.AddrPort{}, v, t0)
	if got := b.Others(); !slices.Equal(got, []node.ID{2}) {
		t.Fatalf("ids %v, want [2]", got)
	}
	if a, _ := b.Addr(2); a != ap("127.0.0.1:7002") {
		t.Fatalf("a third party's book moved member 2 to %v", a)
	}
}

// TestAddressBookExclude: the processes an exclusion names strike their
// members off (a slot's exclusion strikes its member; unknown IDs and this
// member's own are ignored); the struck member is Buried at its
// incarnation, so the service tells it, and it comes back as the next
// one; a restart (a newer incarnation) comes back too.
func TestAddressBookExclude(t *testing.T) {
	b1 := member(1, 10, "127.0.0.1:7001", 4)
	b2 := member(2, 20, "127.0.0.1:7002", 4)
	b3 := member(3, 30, "127.0.0.1:7003", 4)
	b1.Merge(2, netip.AddrPort{}, b2.View(), t0)
	b1.Merge(3, netip.AddrPort{}, b3.View(), t0)
	b1.Observe(1<<24|3, ap("127.0.0.1:8003"), t0)
	if got := b1.Exclude([]node.ID{1<<24 | 3, 3, 1, 1<<24 | 1, 7}, t0); !slices.Equal(got, []node.ID{3}) {
		t.Fatalf("struck off %v, want [3]", got)
	}
	if got := b1.Others(); !slices.Equal(got, []node.ID{2}) {
		t.Fatalf("the book after the exclusion of 3's processes: %v", got)
	}
	if v := b1.View(); v.Gone[3] != (Tomb{Inc: 30, Why: GoneExcluded}) {
		t.Fatalf("the tomb: %+v", v.Gone[3])
	}
	if b1.Buried(2, 20) || !b1.Buried(3, 30) || b1.Buried(3, 31) || b1.Buried(1<<24|3, 30) {
		t.Fatal("Buried: only member 3 at incarnation 30 or older is")
	}
	// 3 is alive: its own book (incarnation 30) does not bring it back;
	// told of its tomb, it speaks as 31, which does.
	b1.Merge(3, netip.AddrPort{}, b3.View(), t0)
	if slices.Contains(b1.Members(), 3) {
		t.Fatal("the excluded member's own book of before brought it back")
	}
	b3.Merge(1, netip.AddrPort{}, b1.View(), t0)
	b1.Merge(3, netip.AddrPort{}, b3.View(), t0)
	if !slices.Contains(b1.Members(), 3) || b1.Buried(3, b3.Inc()) {
		t.Fatalf("member 3 at incarnation %d is not back: %v", b3.Inc(), b1.Members())
	}
	// 2 is excluded and restarts: its new incarnation comes back.
	if got := b1.Exclude([]node.ID{2}, t0); !slices.Equal(got, []node.ID{2}) {
		t.Fatalf("struck off %v, want [2]", got)
	}
	b1.Merge(2, netip.AddrPort{}, member(2, 25, "127.0.0.1:7002", 0).View(), t0.Add(time.Second))
	if !slices.Equal(b1.Members(), []node.ID{2, 3}) {
		t.Fatalf("the restarted member 2 is not back: %v", b1.Members())
	}
}
