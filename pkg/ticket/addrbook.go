package ticket

import (
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// The address book of a pool's members.
//
// The seed's processes know each other through the core's messages; a
// service that runs one member per host also needs to know which members
// exist and where they are, outside the core: whom a new process asks to
// join (CJOIN needs a contact), whom a member asks for a ticket, and whom
// it must hear from before it may found an ended pool again. A member on
// that list that does not exist any more blocks that last step for ever,
// so the book decides who is on it:
//
//   - A joiner is not on it until it accepts the pool (its --tickets and
//     ID checked) and speaks for itself with its own book: a hello alone,
//     or frames from an ID nobody listed, add nobody.
//   - A member that leaves says so (Leave with GoneLeft); an operator can
//     forget a member for good (GoneForgotten); a member whose processes
//     the core excluded (§4) is struck off (GoneExcluded). Each of these
//     is a tombstone for the member's incarnation, carried in every book,
//     so that an older book gossiped later cannot bring the member back.
//   - An incarnation is the member's start (any number that grows from
//     one start of a member to the next). Only a newer incarnation than
//     the tomb's comes back: a member that left or was forgotten by
//     joining again; an excluded member that is alive learns of its tomb
//     from a book and speaks on as the next incarnation. A forgotten
//     member that learns of its tomb must stop (it is out for good).
//   - An ID belongs to one member: a joiner whose ID a member other than
//     itself (another address, another incarnation) holds, and that was
//     heard from within Live, is refused.

// MemberMask: a member's processes (its slots) share their ID's low bits
// with the member's ID; the top byte numbers the slot.
const MemberMask node.ID = 1<<24 - 1

// MemberOf is the member an ID (a slot's) belongs to.
func MemberOf(id node.ID) node.ID { return id & MemberMask }

// Gone is why a member left the book. Values are part of the wire
// protocol (books carry them); append only.
type Gone uint8

const (
	// GoneExcluded: the core excluded the member's processes (§4); its own
	// word brings it back.
	GoneExcluded Gone = iota + 1
	// GoneLeft: the member stopped and said so.
	GoneLeft
	// GoneForgotten: an operator removed the member for good; it comes
	// back only as a new incarnation, by joining.
	GoneForgotten
)

func (g Gone) String() string {
	switch g {
	case GoneExcluded:
		return "excluded"
	case GoneLeft:
		return "left"
	case GoneForgotten:
		return "forgotten"
	}
	return "gone"
}

// BookEntry is where a member's process is, and the member's incarnation.
type BookEntry struct {
	Addr netip.AddrPort `json:"addr"`
	Inc  uint64         `json:"inc"`
}

// Tomb says a member's incarnation Inc (and every older one) is gone.
type Tomb struct {
	Inc uint64 `json:"inc"`
	Why Gone   `json:"why"`
}

// BookView is what a member's book says, as it sends it.
type BookView struct {
	Inc     uint64                `json:"inc,omitempty"` // the sender's incarnation
	Tickets uint32                `json:"tickets,omitempty"`
	Members map[node.ID]BookEntry `json:"members,omitempty"`
	Gone    map[node.ID]Tomb      `json:"gone,omitempty"`
}

// maxTombs bounds the tombstones kept; the oldest go first.
const maxTombs = 1024

type bookEntry struct {
	BookEntry
	heard    time.Time // last word from the process itself (zero: only books)
	observed bool      // the address is where its frames come from
}

type tomb struct {
	Tomb
	at time.Time
}

// AddressBook is one member's book. It is a pure value: every call gets
// the time, and it does no I/O; the service moves its views and
// addresses to and from sockets.
type AddressBook struct {
	self    node.ID // the member's ID
	inc     uint64  // its incarnation
	n       uint32  // the pool's size, once known
	live    time.Duration
	mine    map[node.ID]netip.AddrPort // this member's slots
	members map[node.ID]*bookEntry     // other members' processes
	gone    map[node.ID]tomb           // by member ID
}

// NewAddressBook is the book of member self, incarnation inc, of a pool
// of n tickets (0: not known yet). A member heard from within live holds
// its ID against a joiner.
func NewAddressBook(self node.ID, inc uint64, n uint32, live time.Duration) *AddressBook {
	return &AddressBook{self: self, inc: inc, n: n, live: live, mine: map[node.ID]netip.AddrPort{},
		members: map[node.ID]*bookEntry{}, gone: map[node.ID]tomb{}}
}

// Inc is this member's incarnation.
func (b *AddressBook) Inc() uint64 { return b.inc }

// AddSlot records one of this member's own processes and its address.
func (b *AddressBook) AddSlot(id node.ID, addr netip.AddrPort) {
	b.mine[id] = addr
	delete(b.members, id)
}

// foreign: id is another member's process (not this member's, not a
// client, not None).
func (b *AddressBook) foreign(id node.ID) bool {
	if id == node.None || id >= wire.ClientIDBase || MemberOf(id) == b.self {
		return false
	}
	_, own := b.mine[id]
	return !own
}

// Observe learns from an authenticated frame from id at src, and reports
// whether the transport should send to id at src from now on. Frames move
// a known process (a restart elsewhere) but add only the slots of known
// members: a frame from an unknown member, a refused joiner's say, adds
// nobody. A process heard from within live at another address keeps its
// place (a second process under the same ID does not take its traffic).
func (b *AddressBook) Observe(id node.ID, src netip.AddrPort, now time.Time) bool {
	if !b.foreign(id) || !src.IsValid() {
		return false
	}
	if e, ok := b.members[id]; ok {
		if e.Addr == src {
			e.heard, e.observed = now, true
			return false
		}
		if e.observed && !e.heard.IsZero() && now.Sub(e.heard) < b.live {
			return false
		}
		e.Addr, e.heard, e.observed = src, now, true
		return true
	}
	owner := MemberOf(id)
	if o, ok := b.members[owner]; ok && owner != id {
		b.members[id] = &bookEntry{BookEntry: BookEntry{Addr: src, Inc: o.Inc}, heard: now, observed: true}
	}
	return true
}

// Hello checks a joiner's ID: it reports the address of the member that
// holds it if that is another process (this member itself, or one at
// another address under another incarnation heard from within live).
// A hello adds nobody.
func (b *AddressBook) Hello(id node.ID, src netip.AddrPort, inc uint64, now time.Time) (holder netip.AddrPort, taken bool) {
	if MemberOf(id) == b.self {
		return b.mine[b.self], true
	}
	e, ok := b.members[id]
	if !ok || e.Inc == inc || e.Addr == src {
		return netip.AddrPort{}, false
	}
	if e.heard.IsZero() || now.Sub(e.heard) >= b.live {
		return netip.AddrPort{}, false // gone quiet: a restart takes its place
	}
	return e.Addr, true
}

// Merge learns what member from's book says, sent from src (invalid: not
// known). The sender speaks for itself and its own slots; what it says of
// others fills in what this book does not know. It reports a pool of
// another size (nothing is merged then), and whether the book says this
// member was forgotten (it must join again, as a new incarnation). The
// addresses the transport should learn are returned.
func (b *AddressBook) Merge(from node.ID, src netip.AddrPort, v BookView, now time.Time) (set map[node.ID]netip.AddrPort, conflict uint32, forgotten bool) {
	if v.Tickets != 0 {
		if b.n == 0 {
			b.n = v.Tickets
		} else if b.n != v.Tickets {
			return nil, v.Tickets, false
		}
	}
	for _, id := range slices.Sorted(maps.Keys(v.Gone)) {
		t := v.Gone[id]
		if MemberOf(id) == b.self {
			switch {
			case t.Inc < b.inc:
			case t.Why == GoneForgotten:
				forgotten = true
			default:
				// Struck off while alive (excluded, or a leave of this
				// ID it never said): it speaks on as a newer incarnation,
				// which every book takes over the tomb.
				b.inc = t.Inc + 1
			}
			continue
		}
		b.bury(MemberOf(id), t, now)
	}
	set = map[node.ID]netip.AddrPort{}
	speaker := MemberOf(from)
	if from == speaker && src.IsValid() && v.Inc != 0 && b.foreign(from) {
		// Where its frame came from wins over what its book says (a
		// member bound to 0.0.0.0 does not list itself).
		if v.Members == nil {
			v.Members = map[node.ID]BookEntry{}
		}
		v.Members[from] = BookEntry{Addr: src, Inc: v.Inc}
	}
	for _, id := range slices.Sorted(maps.Keys(v.Members)) {
		e := v.Members[id]
		if !b.foreign(id) || !e.Addr.IsValid() || e.Addr.Addr().IsUnspecified() {
			continue
		}
		owner := MemberOf(id)
		own := owner == speaker && from != node.None
		if t, ok := b.gone[owner]; ok {
			if e.Inc <= t.Inc {
				continue // an older book's word
			}
			delete(b.gone, owner) // a newer incarnation
		}
		old, ok := b.members[id]
		switch {
		case !ok || e.Inc > old.Inc:
			ne := &bookEntry{BookEntry: e, observed: id == from && src.IsValid()}
			b.members[id] = ne
			set[id] = ne.Addr
		case e.Inc < old.Inc:
			continue
		case id == from && src.IsValid() && old.Addr != src:
			if old.observed && !old.heard.IsZero() && now.Sub(old.heard) < b.live {
				continue // another process under a live member's ID
			}
			old.Addr, old.observed = src, true
			set[id] = src
		case !old.observed && old.Addr != e.Addr && own:
			old.Addr = e.Addr
			set[id] = e.Addr
		}
		if own {
			b.members[id].heard = now
		}
	}
	return set, 0, forgotten
}

// bury records a tomb for member m and strikes its processes of that
// incarnation or older off the book. It reports whether anything changed.
func (b *AddressBook) bury(m node.ID, t Tomb, now time.Time) bool {
	if old, ok := b.gone[m]; ok && (old.Inc > t.Inc || old.Inc == t.Inc && old.Why >= t.Why) {
		return false
	}
	for id, e := range b.members {
		if MemberOf(id) == m && e.Inc <= t.Inc {
			delete(b.members, id)
		}
	}
	b.gone[m] = tomb{Tomb: t, at: now}
	if len(b.gone) > maxTombs {
		oldest := node.None
		for id, g := range b.gone {
			if oldest == node.None || g.at.Before(b.gone[oldest].at) || g.at.Equal(b.gone[oldest].at) && id < oldest {
				oldest = id
			}
		}
		delete(b.gone, oldest)
	}
	return true
}

// Remove strikes member m off the book for why: it said it left (inc is
// the incarnation it spoke for), the core excluded its processes, or an
// operator forgot it (inc 0: the incarnation this book knows). It reports
// the tomb, to carry in this member's book, and false if the book did not
// list the member (nor a later incarnation).
func (b *AddressBook) Remove(m node.ID, why Gone, inc uint64, now time.Time) (Tomb, bool) {
	m = MemberOf(m)
	if m == b.self || m == node.None {
		return Tomb{}, false
	}
	known := uint64(0)
	listed := false
	for id, e := range b.members {
		if MemberOf(id) == m {
			known, listed = max(known, e.Inc), true
		}
	}
	if inc == 0 {
		inc = known
	}
	if !listed || inc < known {
		return Tomb{}, false
	}
	t := Tomb{Inc: inc, Why: why}
	b.bury(m, t, now)
	return t, true
}

// Exclude strikes off the members of processes the core excluded (a
// ReclaimedEvent's Excluded, §4 Algorithm 5), so that nothing waits for
// them any more: a refound asks only the members in the book. It reports
// the members struck off. A member that is alive after all hears of its
// tomb (Buried) and speaks on as a newer incarnation; a restarted one is
// a newer incarnation already. Either comes back with its next book.
func (b *AddressBook) Exclude(ids []node.ID, now time.Time) []node.ID {
	var struck []node.ID
	for _, id := range ids {
		m := MemberOf(id)
		if slices.Contains(struck, m) {
			continue
		}
		if _, ok := b.Remove(m, GoneExcluded, 0, now); ok {
			struck = append(struck, m)
		}
	}
	return struck
}

// Excluded are the members struck off because the core excluded their
// processes within the last d, in order. A refound probes them too: one
// that is alive may be in the core again before the books take it back,
// and its "in" must stop the refound (DecideRefound); its silence does
// not.
func (b *AddressBook) Excluded(now time.Time, d time.Duration) []node.ID {
	var out []node.ID
	for id, t := range b.gone {
		if t.Why == GoneExcluded && now.Sub(t.at) < d {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Buried reports whether member from, speaking as incarnation inc, is
// struck off this book at that incarnation: it must hear of its tomb (the
// service sends it this book), or it would never know to speak on as a
// newer one, and nobody would send it anything again.
func (b *AddressBook) Buried(from node.ID, inc uint64) bool {
	if from != MemberOf(from) || MemberOf(from) == b.self || inc == 0 {
		return false
	}
	t, ok := b.gone[from]
	return ok && inc <= t.Inc
}

// View is this member's book to send: every process it knows (its own
// included, with the addresses given) and the tombs.
func (b *AddressBook) View() BookView {
	v := BookView{Inc: b.inc, Tickets: b.n, Members: map[node.ID]BookEntry{}, Gone: map[node.ID]Tomb{}}
	for id, e := range b.members {
		v.Members[id] = e.BookEntry
	}
	for id, a := range b.mine {
		if a.IsValid() && !a.Addr().IsUnspecified() {
			v.Members[id] = BookEntry{Addr: a, Inc: b.inc}
		}
	}
	for id, t := range b.gone {
		v.Gone[id] = t.Tomb
	}
	return v
}

// IDs are the processes known, other members' and this member's own
// slots, in order (a slot asks another to let it join).
func (b *AddressBook) IDs() []node.ID {
	ids := slices.Collect(maps.Keys(b.members))
	ids = slices.AppendSeq(ids, maps.Keys(b.mine))
	slices.Sort(ids)
	return ids
}

// Others are the other members' processes, in order.
func (b *AddressBook) Others() []node.ID { return slices.Sorted(maps.Keys(b.members)) }

// Members are the other members (their first processes), in order.
func (b *AddressBook) Members() []node.ID {
	var out []node.ID
	for id := range b.members {
		if id == MemberOf(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Addr is where process id is, if the book lists it.
func (b *AddressBook) Addr(id node.ID) (netip.AddrPort, bool) {
	if e, ok := b.members[id]; ok {
		return e.Addr, true
	}
	a, ok := b.mine[id]
	return a, ok
}

// Addrs are the addresses of every process listed, for a transport.
func (b *AddressBook) Addrs() map[node.ID]netip.AddrPort {
	out := map[node.ID]netip.AddrPort{}
	for id, e := range b.members {
		out[id] = e.Addr
	}
	maps.Copy(out, b.mine)
	return out
}

// Size is the pool's size, 0 until known.
func (b *AddressBook) Size() uint32 { return b.n }

// SetSize records the pool's size if it was not known.
func (b *AddressBook) SetSize(n uint32) {
	if b.n == 0 {
		b.n = n
	}
}
