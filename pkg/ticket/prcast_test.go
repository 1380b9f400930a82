package ticket

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// prcastRun: members as ticketd runs them (Member: a Machine and the
// member's PrCast, stepped with the simulator's clocks) form a pool over
// lossy, duplicating links while they announce notices (MsgAnnounce) at
// random; for a while some are cut off. Once the links heal, every member
// must have every other member's notices, each once, with By naming its
// member, within two seconds; the pool's safety is checked throughout.
func prcastRun(seed uint64, noGroup bool) (delivered int, err error) {
	r := rand.New(rand.NewPCG(seed, 53))
	procs := 3 + r.IntN(4)
	ids := make([]node.ID, procs)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	members := map[node.ID]*Member{}
	machines := func() map[node.ID]*Machine {
		out := map[node.ID]*Machine{}
		for id, m := range members {
			out[id] = m.Machine()
		}
		return out
	}
	opts := sim.Options{Seed: seed, MinLatency: time.Millisecond, MaxLatency: time.Duration(2+r.IntN(10)) * time.Millisecond,
		Drop: r.Float64() * 0.1, Dup: r.Float64() * 0.05}
	s := sim.New[Msg](opts, Codec{}, func(id node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
		var contacts []node.ID
		for _, o := range ids {
			if o != id {
				contacts = append(contacts, o)
			}
		}
		cfg := Config{ID: id, Rand: rng, FaultTolerant: true, Round: faultRound, Retry: 20 * time.Millisecond}
		if id == 1 {
			cfg.Tickets = procs
		}
		m, err := NewMember(cfg, func() []node.ID { return contacts }, true)
		if err != nil {
			panic(err)
		}
		members[id] = m
		return m
	}, ids...)
	got := map[node.ID]map[[2]uint64]int{} // member → (by, epoch) → deliveries
	s.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
		if e, ok := ev.(NoticeEvent); ok && !e.Own {
			if got[id] == nil {
				got[id] = map[[2]uint64]int{}
			}
			got[id][[2]uint64{uint64(e.By), e.Epoch}]++
		}
		return nil
	}
	s.Invariant = func() error { return Disjoint(machines()) }
	for _, id := range ids {
		if !noGroup {
			s.Inject(id, Msg{Type: MsgGroup, Group: ids})
		}
		s.Inject(id, Msg{Type: MsgJoin})
	}
	// Notices: 10 to 30 from random members over 3 s; Epoch numbers them.
	sent := map[[2]uint64]bool{}
	count := 10 + r.IntN(21)
	for i := 1; i <= count; i++ {
		id := ids[r.IntN(len(ids))]
		sent[[2]uint64{uint64(id), uint64(i)}] = true
		s.At(s.Now().Add(time.Duration(r.Int64N(int64(3*time.Second)))), func() {
			s.Inject(id, Msg{Type: MsgAnnounce, Notice: &Notice{Event: "taken", Ticket: uint32(i % procs), Epoch: uint64(i)}})
		})
	}
	// One member cut off for a while.
	cut := ids[r.IntN(len(ids))]
	s.At(s.Now().Add(time.Second), func() { s.Isolate(cut) })
	s.At(s.Now().Add(time.Second+time.Duration(r.Int64N(int64(time.Second)))), func() { s.Heal() })
	fail := func(err error) (int, error) {
		return delivered, fmt.Errorf("seed %d (%d members, drop %.2f, dup %.2f, %d cut off): %v", seed, procs, opts.Drop, opts.Dup, cut, err)
	}
	if err := s.RunFor(5 * time.Second); err != nil {
		return fail(err)
	}
	for _, id := range ids {
		for k := range sent {
			if node.ID(k[0]) == id {
				continue
			}
			switch n := got[id][k]; {
			case n == 0:
				return fail(fmt.Errorf("member %d never got notice %d of member %d", id, k[1], k[0]))
			case n > 1:
				return fail(fmt.Errorf("member %d got notice %d of member %d %d times", id, k[1], k[0], n))
			}
			delivered++
		}
		for k := range got[id] {
			if !sent[k] {
				return fail(fmt.Errorf("member %d got notice %d by %d, which that member never announced", id, k[1], k[0]))
			}
		}
	}
	return delivered, nil
}

// TestSimPrCast: PrCast runs in the member's process and the simulator
// runs it (prcastRun). Members that are never told their group (a
// service that does not pass the book on) deliver nothing: the check
// must catch it.
func TestSimPrCast(t *testing.T) {
	if _, err := prcastRun(1, true); err == nil {
		t.Fatal("members never told their group delivered every notice: the check cannot fail")
	}
	total := 0
	for _, seed := range sim.Seeds() {
		n, err := prcastRun(seed, false)
		if err != nil {
			t.Fatalf("%v\nreplay: go test ./pkg/ticket -run TestSimPrCast -seed %d", err, seed)
		}
		total += n
	}
	t.Logf("%d seeds: %d notices delivered, each once, to every other member", len(sim.Seeds()), total)
}

// TestPrCastGroup: a Member's notices reach only the members of its
// group; its own come back to it as its own at once, stamped with its
// member and its now.
func TestPrCastGroup(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	m, err := NewMember(Config{ID: 1<<24 | 4, Tickets: 3, Rand: rand.New(rand.NewPCG(1, 2))}, func() []node.ID { return nil }, true)
	if err != nil {
		t.Fatal(err)
	}
	m.Tick(now)
	_ = m.Step(now, node.Envelope[Msg]{From: 1<<24 | 4, To: 1<<24 | 4, Msg: Msg{Type: MsgGroup, Group: []node.ID{2, 7}}})
	_ = m.Step(now, node.Envelope[Msg]{From: 1<<24 | 4, To: 1<<24 | 4, Msg: Msg{Type: MsgAnnounce, Notice: &Notice{Event: "taken", Ticket: 2, Epoch: 9}}})
	var to []node.ID
	var own []NoticeEvent
	for i := 0; i < 50; i++ {
		r := m.Ready()
		for _, e := range r.Msgs {
			if e.Msg.Type == MsgPrCast && !slices.Contains(to, e.To) {
				to = append(to, e.To)
			}
		}
		for _, ev := range r.Events {
			if e, ok := ev.(NoticeEvent); ok {
				own = append(own, e)
			}
		}
		now = now.Add(100 * time.Millisecond)
		m.Tick(now)
	}
	slices.Sort(to)
	if !slices.Equal(to, []node.ID{2, 7}) {
		t.Fatalf("PrCast sent to %v, want the group [2 7]", to)
	}
	if len(own) != 1 || !own[0].Own || own[0].By != 4 || own[0].AtNS != time.Unix(1_700_000_000, 0).UnixNano() || own[0].String() != "taken 2 by 4 epoch 9" {
		t.Fatalf("own notices: %+v", own)
	}
}

// TestMemberLend: a Member lends its ticket to one command at a time,
// each under a new epoch (LentEvent, before the command may start), only
// while it may act; MsgReturn ends the use (ReturnedEvent).
func TestMemberLend(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	h, err := NewMember(Config{ID: 3, Tickets: 2, Rand: rand.New(rand.NewPCG(3, 4))}, func() []node.ID { return nil }, true)
	if err != nil {
		t.Fatal(err)
	}
	step := func(typ MsgType) []node.Event {
		_ = h.Step(now, node.Envelope[Msg]{From: 3, To: 3, Msg: Msg{Type: typ}})
		var out []node.Event
		for _, ev := range h.Ready().Events {
			switch ev.(type) {
			case LentEvent, LendRefusedEvent, ReturnedEvent:
				out = append(out, ev)
			}
		}
		return out
	}
	if evs := step(MsgLend); len(evs) != 1 || evs[0].Kind() != "lend-refused" {
		t.Fatalf("a lend before joining: %v", evs)
	}
	h.Tick(now)
	step(MsgJoin)
	var last uint64
	for i := 0; i < 3; i++ {
		evs := step(MsgLend)
		e, ok := evs[0].(LentEvent)
		if len(evs) != 1 || !ok || e.Ticket != 1 || e.Epoch <= last || e.N != 2 {
			t.Fatalf("lend %d: %v", i, evs)
		}
		if again := step(MsgLend); len(again) != 1 || again[0].Kind() != "lend-refused" {
			t.Fatalf("a second lend while the first use runs: %v", again)
		}
		if ret := step(MsgReturn); len(ret) != 1 || ret[0] != (ReturnedEvent{Ticket: 1, Epoch: e.Epoch}) {
			t.Fatalf("return: %v", ret)
		}
		last = e.Epoch
	}
	if ret := step(MsgReturn); len(ret) != 0 {
		t.Fatalf("a return with nothing lent: %v", ret)
	}
}
