package ticket

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// excludedRun: a settled core of four members, each with the address book
// ticketd keeps (gossiped every second between the members that can
// speak, a struck-off member told of its tomb). One member crashes; the
// core excludes it, and with strike its excluder strikes it off the book
// (ReclaimedEvent.Excluded, AddressBook.Exclude) and the gossip carries
// the tomb. Then every survivor stalls past the support window, the pool
// ends, and the lowest survivor probes the members in its book: with
// strike it founds the pool again (the dead member is not asked); without
// it, the dead member's silence blocks the refound for good. It returns
// that decision, or an error if a book still lists the dead member.
func excludedRun(seed uint64, strike bool) (Refound, error) {
	p, err := settledPool(seed, 4, 4, 1, 0, 300*time.Millisecond)
	if err != nil {
		return Refound{}, err
	}
	s := p.s
	addr := func(id node.ID) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 7000+uint16(id))
	}
	books := map[node.ID]*AddressBook{}
	for _, id := range p.ids {
		books[id] = NewAddressBook(id, 100*uint64(id), 4, 3*time.Second)
		books[id].AddSlot(id, addr(id))
	}
	speaks := func(id node.ID) bool { return s.Alive(id) && !s.Paused(id) }
	// tell: member a's book reaches member b; b answers a member it has
	// struck off with its own book (ticketd's sendBook).
	tell := func(a, b node.ID) {
		now := s.Now()
		if books[b].Buried(a, books[a].Inc()) {
			books[a].Merge(b, addr(b), books[b].View(), now)
		}
		books[b].Merge(a, addr(a), books[a].View(), now)
	}
	for _, a := range p.ids {
		for _, b := range p.ids {
			if a != b {
				tell(a, b)
			}
		}
	}
	var gossip func()
	gossip = func() {
		for _, a := range p.ids {
			if !speaks(a) {
				continue
			}
			for _, b := range books[a].Members() {
				if speaks(b) {
					tell(a, b)
				}
			}
		}
		s.At(s.Now().Add(time.Second), gossip)
	}
	s.At(s.Now().Add(time.Second), gossip)
	var reclaimed []node.ID
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if *traceFlag {
			fmt.Printf("%v %d %v\n", at.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), id, ev)
		}
		if e, ok := ev.(ReclaimedEvent); ok {
			reclaimed = append(reclaimed, e.Excluded...)
			if strike {
				books[id].Exclude(e.Excluded, s.LocalNow(id))
			}
		}
		return nil
	}
	// The crash comes once every member is in the core and settled, from
	// one to two seconds after the pool first settled (as in
	// TestSimCrashReclaim).
	if err := s.RunFor(time.Second + time.Duration(p.r.Int64N(int64(time.Second)))); err != nil {
		return Refound{}, err
	}
	settled := func() bool {
		for _, id := range p.ids {
			if p.machines[id].st != stCoordinator || !p.machines[id].Settled(s.LocalNow(id)) {
				return false
			}
		}
		return true
	}
	for i := 0; !settled(); i++ {
		if i == 300 {
			return Refound{}, fmt.Errorf("the four members are not all in a settled core: %v", p.coreOf())
		}
		if err := s.RunFor(10 * time.Millisecond); err != nil {
			return Refound{}, err
		}
	}
	core := p.coreOf()
	victim := core[p.r.IntN(len(core))]
	if *traceFlag {
		fmt.Printf("-- crash %d at %v, core %v\n", victim, s.Now(), core)
	}
	s.Crash(victim)
	// Exclusion (about 2 s, doc.go "Liveness") and a gossip round.
	if err := s.RunFor(4 * time.Second); err != nil {
		return Refound{}, err
	}
	if !slices.Contains(reclaimed, victim) {
		return Refound{}, fmt.Errorf("no reclaim named the crashed member %d (excluded: %v)", victim, reclaimed)
	}
	var survivors []node.ID
	for _, id := range p.ids {
		if id == victim {
			continue
		}
		survivors = append(survivors, id)
		if strike && slices.Contains(books[id].Members(), victim) {
			return Refound{}, fmt.Errorf("member %d's book still lists the excluded member %d: %v", id, victim, books[id].Members())
		}
	}
	// Every survivor stalls past the support window: the core ends.
	for _, id := range survivors {
		s.Pause(id)
	}
	if err := s.RunFor(time.Second); err != nil {
		return Refound{}, err
	}
	for _, id := range survivors {
		s.Resume(id)
	}
	if err := s.RunFor(500 * time.Millisecond); err != nil {
		return Refound{}, err
	}
	answers := map[node.ID]ProbeAnswer{}
	for _, id := range survivors {
		if st := p.machines[id].st; st != stExcluded && st != stIdle && st != stLeft {
			return Refound{}, fmt.Errorf("member %d is %v after every survivor stalled past the window", id, st)
		}
		answers[id] = ProbeAnswer{Out: true, Floor: p.machines[id].Floor(), Members: books[id].Members(), Durable: true}
	}
	prober := survivors[0]
	d := DecideRefound(prober, p.machines[prober].Floor(), true, books[prober].Members(), answers)
	return d, nil
}

// TestSimExcludedLeaveBook: a member the core excluded leaves every
// member's address book, so that a pool which ends later is founded again
// without waiting for it. The same runs with the members keeping the
// excluded member in their books (no strike) must be blocked by its
// silence: that is what the test catches.
func TestSimExcludedLeaveBook(t *testing.T) {
	runs := simtest.EverySeed(t, func(seed uint64) error {
		d, err := excludedRun(seed, true)
		if err == nil && !d.Found {
			err = fmt.Errorf("the lowest survivor does not found the pool again: %s %v", d.Why, d.Blocking)
		}
		return err
	})
	simtest.EverySeedOf(t, sim.Seeds()[:min(5, len(sim.Seeds()))], func(seed uint64) error {
		d, err := excludedRun(seed, false)
		if err != nil {
			return fmt.Errorf("without the strike: %w", err)
		}
		if d.Found || len(d.Blocking) != 1 {
			return fmt.Errorf("with the excluded member kept in the books the refound was not blocked by it: %+v", d)
		}
		return nil
	})
	t.Logf("%d seeds: the crashed member was excluded, struck off every book, and the pool founded again without it", runs)
}
