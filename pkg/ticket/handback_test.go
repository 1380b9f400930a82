package ticket

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/sim"
)

// hbWorld is a seeded model of a pool of members, each scheduled by its
// own HandBack, over an abstract pool of tickets: a slot that leaves frees
// its ticket a round later (CLEAVE), a joining slot takes a free one a
// round after its join started, oldest join first (CJOIN), a lend is
// answered at the next step, an ask reaches the member asked a step
// later. Clients re-ask as soon as they release, so a busy member always
// has clients waiting.
type hbWorld struct {
	t       *testing.T
	rng     *rand.Rand
	now     time.Time
	round   time.Duration
	n       int // tickets
	free    []time.Time
	members []*hbMember
	// the longest any member waited with clients queued and no grant
	worst      time.Duration
	worstWho   int
	grants     []int
	idleOnly   bool
	askPending []hbAsk
}

type hbAsk struct {
	to int
	at time.Time
}

type hbMember struct {
	h        *HandBack
	slots    []hbModelSlot
	clients  int
	nextID   uint64
	uses     map[uint64]time.Time // client -> end of its use
	lends    []int                // slots asked to lend, answered next step
	waitFrom time.Time            // clients queued since, with no grant
}

type hbModelSlot struct {
	state  string
	joined time.Time
}

func newHBWorld(t *testing.T, seed uint64, idleOnly bool) *hbWorld {
	rng := rand.New(rand.NewPCG(seed, 0x4b))
	w := &hbWorld{t: t, rng: rng, now: time.Unix(1000, 0), round: 40 * time.Millisecond, n: 2 + rng.IntN(4), idleOnly: idleOnly}
	nm := 2 + rng.IntN(3)
	for m := 0; m < nm; m++ {
		h := NewHandBack(HandBackConfig{Round: w.round, MaxSlots: 0xF0, HoldSlice: 2 * time.Second,
			EagerPause: 5 * time.Second, IdleSlot: 2 * time.Second, AskEvery: 5, Busy: 4 * w.round})
		h.idleOnly = idleOnly
		mb := &hbMember{h: h, slots: []hbModelSlot{{state: "idle"}}, uses: map[uint64]time.Time{}}
		w.members = append(w.members, mb)
	}
	w.grants = make([]int, nm)
	// Member 0 holds every ticket, one slot each, and keeps them busy.
	m0 := w.members[0]
	for i := 0; i < w.n; i++ {
		if i > 0 {
			m0.slots = append(m0.slots, hbModelSlot{})
			m0.h.slots = append(m0.h.slots, hbSlot{})
		}
		m0.slots[i].state = "coordinator"
		w.view(0, i)
		m0.h.Taken(i, w.now)
	}
	m0.clients = 2*w.n + rng.IntN(8)
	// The others have clients too, from a random start.
	for m := 1; m < nm; m++ {
		w.members[m].clients = 1 + rng.IntN(4)
	}
	return w
}

func (w *hbWorld) inCore() int {
	c := 0
	for _, mb := range w.members {
		for _, s := range mb.slots {
			if s.state == "coordinator" {
				c++
			}
		}
	}
	return c
}

func (w *hbWorld) view(m, i int) {
	s := w.members[m].slots[i]
	co := s.state == "coordinator"
	w.members[m].h.View(i, SlotView{State: s.state, MayAct: co, Alone: co && w.inCore() == 1, Settled: true})
}

func (w *hbWorld) want(m int) {
	mb := w.members[m]
	mb.nextID++
	if mb.h.Waiting() == 0 {
		mb.waitFrom = w.now
	}
	mb.h.Want(mb.nextID, false, w.now)
}

// act carries out member m's actions, as pkg/ticketd does.
func (w *hbWorld) act(m int) {
	mb := w.members[m]
	for _, a := range mb.h.Ready() {
		switch a.Kind {
		case ActLend:
			mb.lends = append(mb.lends, a.Slot)
		case ActReturn:
		case ActLeave:
			if mb.slots[a.Slot].state == "coordinator" {
				mb.slots[a.Slot].state = "left"
				w.free = append(w.free, w.now.Add(w.round))
				w.view(m, a.Slot)
			}
		case ActReset:
			mb.slots[a.Slot].state = "idle"
			w.view(m, a.Slot)
		case ActJoin:
			if a.Slot == len(mb.slots) {
				mb.slots = append(mb.slots, hbModelSlot{})
			}
			if mb.slots[a.Slot].state != "coordinator" {
				mb.slots[a.Slot] = hbModelSlot{state: "joining", joined: w.now}
				w.view(m, a.Slot)
			}
		case ActHand:
			mb.uses[a.Client] = w.now.Add(time.Duration(5+w.rng.IntN(60)) * time.Millisecond)
			w.grants[m]++
			if mb.h.Waiting() > 0 {
				mb.waitFrom = w.now
			} else {
				mb.waitFrom = time.Time{}
			}
		case ActAsk:
			to := (m + 1 + a.Turn%(len(w.members)-1)) % len(w.members)
			w.askPending = append(w.askPending, hbAsk{to: to, at: w.now.Add(5 * time.Millisecond)})
		case ActBusy:
			w.t.Fatalf("no client here is nonblocking")
		}
	}
}

func (w *hbWorld) step(dt time.Duration, tick bool) {
	w.now = w.now.Add(dt)
	for m, mb := range w.members {
		// Lends asked for at the last step are answered.
		lends := mb.lends
		mb.lends = nil
		for _, i := range lends {
			if mb.slots[i].state == "coordinator" {
				mb.h.Lent(i)
			} else {
				mb.h.Refused(i)
			}
			w.act(m)
		}
		for c, end := range mb.uses {
			if !w.now.Before(end) {
				delete(mb.uses, c)
				mb.h.Release(c, w.now)
				w.act(m)
				w.want(m) // the client asks again at once
				w.act(m)
			}
		}
	}
	// Asks arrive.
	rest := w.askPending[:0]
	for _, a := range w.askPending {
		if w.now.Before(a.at) {
			rest = append(rest, a)
			continue
		}
		w.members[a.to].h.Wanted(w.now)
	}
	w.askPending = rest
	// Free tickets go to the oldest joins a round old.
	for len(w.free) > 0 && !w.now.Before(w.free[0]) {
		bm, bi := -1, -1
		for m, mb := range w.members {
			for i, s := range mb.slots {
				if s.state == "joining" && w.now.Sub(s.joined) >= w.round && (bm < 0 || s.joined.Before(w.members[bm].slots[bi].joined)) {
					bm, bi = m, i
				}
			}
		}
		if bm < 0 {
			break
		}
		w.free = w.free[1:]
		w.members[bm].slots[bi].state = "coordinator"
		w.view(bm, bi)
		w.members[bm].h.Taken(bi, w.now)
		w.act(bm)
	}
	if tick {
		for m, mb := range w.members {
			for i := range mb.slots {
				w.view(m, i)
			}
			mb.h.Tick(w.now, w.n)
			w.act(m)
		}
	}
	for m, mb := range w.members {
		if !mb.waitFrom.IsZero() && mb.h.Waiting() > 0 {
			if d := w.now.Sub(mb.waitFrom); d > w.worst {
				w.worst, w.worstWho = d, m
			}
		}
	}
}

// run: every member's clients start asking within the first second; the
// pool runs for 20 s of model time, a tick every quarter round.
func (w *hbWorld) run() {
	start := make([]time.Time, len(w.members))
	for m := range w.members {
		start[m] = w.now.Add(time.Duration(w.rng.IntN(1000)) * time.Millisecond)
	}
	started := make([]bool, len(w.members))
	end := w.now.Add(20 * time.Second)
	for k := 0; w.now.Before(end); k++ {
		for m, mb := range w.members {
			if !started[m] && !w.now.Before(start[m]) {
				started[m] = true
				for c := 0; c < mb.clients; c++ {
					w.want(m)
					w.act(m)
				}
			}
		}
		w.step(5*time.Millisecond, k%2 == 1)
	}
}

// handBackBound: the longest a member with clients waiting may go without
// a grant while another member keeps re-granting. A member that holds the
// only ticket in the core keeps it for HoldSlice (2 s); the asker's join
// must be two rounds old before it asks (AskEvery rounds apart), and the
// ticket given back reaches it a round later. 3 s leaves room for the
// asker to be second in line once.
const handBackBound = 3 * time.Second

// TestHandBackNoStarvation: over seeded pools (2–5 tickets, 2–4 members,
// one member starting with every ticket and more clients than tickets,
// each client asking again as soon as it releases), every member with
// clients waiting gets a grant within handBackBound. A pool of one
// ticket is left out: its core is one process, which may not leave
// (Machine.Alone: the pool would end), so its ticket stays where it is.
func TestHandBackNoStarvation(t *testing.T) {
	seeds := sim.Seeds()
	worst, who := time.Duration(0), uint64(0)
	for _, seed := range seeds {
		w := newHBWorld(t, seed, false)
		w.run()
		if w.worst > worst {
			worst, who = w.worst, seed
		}
		if w.worst > handBackBound {
			t.Fatalf("seed %d: member %d waited %v with clients queued and no grant (bound %v; %d tickets, grants %v)",
				seed, w.worstWho, w.worst, handBackBound, w.n, w.grants)
		}
		for m, g := range w.grants {
			if g == 0 {
				t.Fatalf("seed %d: member %d was never granted (grants %v)", seed, m, w.grants)
			}
		}
	}
	t.Logf("%d seeds: the longest wait for a grant with clients queued was %v (seed %d)", len(seeds), worst, who)
}

// TestHandBackCatchesIdleOnly plants the old rule (a ticket goes back only
// from an idle slot): a member whose clients re-ask at once never has an
// idle slot at a tick, and the member that asks starves. The check above
// must catch it.
func TestHandBackCatchesIdleOnly(t *testing.T) {
	caught := 0
	var first string
	for seed := uint64(1); seed <= 20; seed++ {
		w := newHBWorld(t, seed, true)
		w.run()
		if w.worst > handBackBound {
			caught++
			if first == "" {
				first = fmt.Sprintf("seed %d: member %d waited %v (grants %v)", seed, w.worstWho, w.worst, w.grants)
			}
		}
	}
	if caught == 0 {
		t.Fatal("the idle-only rule starved nobody in 20 seeds: the check cannot tell it apart")
	}
	t.Logf("idle-only rule: %d of 20 seeds starve a member; %s", caught, first)
}
