package group

import (
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// flood runs n members that each send their share of count numbered
// messages (member i sends count·i/n) as fast as their windows let them,
// on links of 1–4 ms that lose drop of all frames, each leaving once its
// own sends are done while the others still send (as mcast bench does);
// it checks what mcast bench checks: at every member, each sender's
// messages arrive numbered 1, 2, 3 ... with no gap and no repeat, and no
// member is removed from the group (which would explain a gap).
func flood(t *testing.T, seed uint64, n, count int, cfg Config, drop float64) error {
	return floodPaused(t, seed, n, count, cfg, drop, node.None, 0)
}

// floodPaused is flood with member paused cut off from the others for
// pause from the flood's 40th millisecond, sending all the while (as a
// member under a flood's backlog that the others no longer hear): long
// enough, and the others go on without it. Its own gaps (it missed the views it was out of) are
// reported to it (RemovedEvent) and excused; the members that stay must
// see every sender's stream whole, the paused one's included, and the
// paused one must report no lost message (LostEvent).
func floodPaused(t *testing.T, seed uint64, n, count int, cfg Config, drop float64, paused node.ID, pause time.Duration) error {
	t.Helper()
	ids := make([]node.ID, n)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	s := sim.New[Msg](sim.Options{Seed: seed, MinLatency: time.Millisecond, MaxLatency: 4 * time.Millisecond, Drop: drop}, Codec{},
		func(id node.ID, _ int, _ *rand.Rand) node.Machine[Msg] {
			c := cfg
			c.ID, c.Inc, c.Found, c.Contacts, c.StartWith = id, 1, id == 1, ids, n
			m, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}, ids...)
	next := map[[2]node.ID]int{}
	removed := map[node.ID]bool{}
	healed, back := false, false
	has := func(id node.ID) bool {
		for j, from := range ids {
			if next[[2]node.ID{id, from}] != count*(j+1)/n {
				return false
			}
		}
		return true
	}
	var bad error
	delivered := 0
	s.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
		switch e := ev.(type) {
		case DeliverEvent:
			k, _ := strconv.Atoi(strings.TrimPrefix(string(e.Payload), fmt.Sprintf("%d-", e.Sender)))
			key := [2]node.ID{id, e.Sender}
			if k != next[key]+1 && bad == nil && !(removed[id] && k > next[key]) {
				bad = fmt.Errorf("seed %d: member %d got message %d of %d after %d (view %d, seq %d)", seed, id, k, e.Sender, next[key], e.View, e.Seq)
			}
			next[key] = max(next[key], k)
			delivered++
		case ViewEvent:
			if floodDebug && id == paused {
				fmt.Println("view", id, e)
			}
			back = back || id == paused && healed && len(e.Members) == n
		case RemovedEvent:
			if floodDebug {
				fmt.Println("removed", id, e)
			}
			removed[id] = true
			if bad == nil && id != paused {
				bad = fmt.Errorf("seed %d: member %d removed from view %d", seed, id, e.View)
			}
		case LostEvent:
			if bad == nil {
				bad = fmt.Errorf("seed %d: member %d: %v", seed, id, e)
			}
		}
		return nil
	}
	sent, ended := make([]int, n), make([]bool, n)
	for step := 0; step < 20000; step++ {
		if paused != node.None && step == 40 {
			s.Isolate(paused)
			s.At(s.Now().Add(pause), func() { s.Heal(); healed = true })
		}
		busy := false
		for i, id := range ids {
			if sent[i] == count*(i+1)/n {
				// As mcast bench: a member leaves once its own sends are
				// done, while the others still send (with a member cut
				// off: once it is back in a view of all n and it has
				// every message, as a bench member waits for all).
				if !ended[i] && (paused == node.None || back && (id == paused || has(id))) {
					ended[i] = true
					s.Inject(id, Msg{Type: MsgEnd})
				}
				continue
			}
			busy = true
			var items []mcast.Item
			for k := sent[i] + 1; k <= min(count*(i+1)/n, sent[i]+20); k++ {
				items = append(items, mcast.Item{Payload: []byte(fmt.Sprintf("%d-%d", id, k))})
			}
			r := s.Stats.Rejected
			s.Inject(id, Msg{Type: MsgSend, Items: items})
			if s.Stats.Rejected == r {
				sent[i] += len(items)
			}
		}
		if err := s.RunFor(time.Millisecond); err != nil {
			return err
		}
		if bad != nil {
			return bad
		}
		done := !busy
		for _, id := range ids {
			done = done && s.Machine(id).(*Group).Done()
		}
		if done && paused != node.None {
			// Everyone stayed until every send was done: each member
			// that was never removed has every sender's whole stream.
			for _, id := range ids {
				for j, from := range ids {
					if k := next[[2]node.ID{id, from}]; !removed[id] && k != count*(j+1)/n {
						return fmt.Errorf("seed %d: member %d has %d of the %d messages of %d", seed, id, k, count*(j+1)/n, from)
					}
				}
			}
		}
		if done {
			return nil
		}
	}
	total := 0
	for _, k := range sent {
		total += k
	}
	return fmt.Errorf("seed %d: %d of %d deliveries, sent %v", seed, delivered, n*total, sent)
}

// TestFloodSequence: nine members flood under 1% loss in ISIS and TOTEM
// order, leaving one after the other as their sends end, and every
// member sees every sender's sequence whole (the sequence checks of
// mcast bench). The planted bug that delivers past a stamp whose message
// is not here yet is caught as a gap.
func TestFloodSequence(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator flood: run without -race")
	}
	for _, total := range []Total{TotalISIS, TotalTotem} {
		for seed := uint64(1); seed <= 2; seed++ {
			if err := flood(t, seed, 9, 1000+int(seed)*1000, Config{Total: total}, 0.01); err != nil {
				t.Errorf("%v: %v", total, err)
			}
		}
	}
	if err := flood(t, 1, 9, 2000, Config{Total: TotalSequencer, bug: bugSkipGap}, 0.01); err == nil {
		t.Error("planted bug (deliver past a stamp gap) not caught")
	} else {
		t.Logf("planted bug caught: %v", err)
	}
}

// TestFloodRemovedSender: nine members flood under 1% loss and one of
// them is cut off for three Suspect times mid-flood, still sending, so
// the others go on without it while it sends. Virtual synchrony
// delivers none of its messages past the view's cut at the members that
// stay; it sends them again from its next incarnation, so every sender's
// stream stays whole at every member that stayed (the sequence check of
// mcast bench), and nothing is reported lost. The planted bug that drops
// them instead is caught as a gap.
func TestFloodRemovedSender(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator flood: run without -race")
	}
	pause := 3 * Config{}.SuspectTime()
	for i, total := range []Total{TotalSequencer, TotalISIS, TotalTotem} {
		seed := uint64(1 + i)
		if err := floodPaused(t, seed, 9, 3000, Config{Total: total}, 0.01, 9, pause); err != nil {
			t.Errorf("%v: %v", total, err)
		}
	}
	if err := floodPaused(t, 1, 9, 3000, Config{Total: TotalSequencer, bug: bugNoRequeue}, 0.01, 9, pause); err == nil {
		t.Error("planted bug (a removed member drops its messages past the cut) not caught")
	} else {
		t.Logf("planted bug caught: %v", err)
	}
}

var floodDebug = false

// TestLocalHealth: a member whose ticks come late (it was not running on
// time, as under a flood's backlog on a loaded machine) waits longer
// before it suspects others, up to (1+maxHealth)·Suspect, and each
// Suspect on time gives a step back, so an idle member suspects after
// Suspect (Lifeguard's local health multiplier). The planted bug that
// ignores lateness keeps Suspect.
func TestLocalHealth(t *testing.T) {
	for _, bug := range []bug{0, bugNoHealth} {
		g, err := New(Config{ID: 1, Inc: 1, Found: true})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1000, 0)
		g.cfg.bug = bug
		period, suspect := g.cfg.Period, g.cfg.Suspect
		g.Tick(now)
		if got := g.suspectFor(0); got != suspect {
			t.Fatalf("at start: %v, want %v", got, suspect)
		}
		for i := 0; i < 20; i++ { // late ticks: 3 Periods apart
			now = now.Add(3 * period)
			g.Tick(now)
		}
		want := (1 + maxHealth) * suspect
		if bug != 0 {
			want = suspect
		}
		if got := g.suspectFor(0); got != want {
			t.Errorf("bug %d: after late ticks: %v, want %v", bug, got, want)
		}
		for i := 0; i < 2*(maxHealth+1)*int(suspect/period); i++ { // on time
			now = now.Add(period / 2)
			g.Tick(now)
		}
		if got := g.suspectFor(0); got != suspect {
			t.Errorf("bug %d: after ticks on time: %v, want %v", bug, got, suspect)
		}
	}
}
