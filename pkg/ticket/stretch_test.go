package ticket

import (
	"fmt"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// stretchPool is a settled pool of 5 processes (a core of 4, k = 1, 100 ms
// rounds, 300 ms windows, no margin) whose members run with the given
// Config.Stretch and planted bug. Every ExcludedEvent is counted per
// process; Theorem 4.1 stays checked at every step (settledPool).
func stretchPool(seed uint64, stretch int, b bug) (*pool, map[node.ID]int, error) {
	p, err := settledPool(seed, 5, 6, 1, 0, 0)
	if err != nil {
		return nil, nil, err
	}
	for _, m := range p.machines {
		m.cfg.Stretch, m.cfg.bug = stretch, b
	}
	excluded := map[node.ID]int{}
	p.s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if _, ok := ev.(ExcludedEvent); ok {
			excluded[id]++
		}
		return nil
	}
	return p, excluded, nil
}

// pauseFor stalls id for d from now (SIGSTOP and SIGCONT, or a starved
// scheduler).
func (p *pool) pauseFor(id node.ID, d time.Duration) error {
	p.s.Pause(id)
	if err := p.s.RunFor(d); err != nil {
		return err
	}
	p.s.Resume(id)
	return nil
}

// TestHealthFactor: a round that starts half a round late or more raises the
// local-health factor by one (once per overdue round, up to Stretch); it
// comes down by one after healthDecay rounds on time, and every message
// carries it.
func TestHealthFactor(t *testing.T) {
	p, _, err := stretchPool(1, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	id := p.coreOf()[0]
	m := p.machines[id]
	if m.Health() != 1 {
		t.Fatalf("health %d on time, want 1", m.Health())
	}
	for want := 2; want <= 4; want++ {
		if err := p.pauseFor(id, 150*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := p.s.RunFor(20 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if got, capped := m.Health(), min(want, 3); got != capped {
			t.Fatalf("after %d late rounds health is %d, want %d", want-1, got, capped)
		}
	}
	if m.Done() {
		t.Fatalf("process %d left the core after 150 ms stalls", id)
	}
	if err := p.s.RunFor(time.Duration(healthDecay+1) * 100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if m.Health() != 2 {
		t.Fatalf("after %d rounds on time health is %d, want 2", healthDecay+1, m.Health())
	}
	if err := p.s.RunFor(time.Duration(3*healthDecay) * 100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if m.Health() != 1 {
		t.Fatalf("after %d more rounds on time health is %d, want 1", 3*healthDecay, m.Health())
	}
	// Every message says so; the codec carries it.
	m.health.level = 2
	m.send(node.ID(99), Msg{Type: MsgAlive})
	sent := m.out[len(m.out)-1].Msg
	m.out = m.out[:len(m.out)-1]
	typ, body, err := Codec{}.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Codec{}.Unmarshal(typ, body)
	if err != nil || back.Stretch != 3 {
		t.Fatalf("ALIVE sent at health 3 decodes with stretch %d (%v)", back.Stretch, err)
	}
}

// TestSimStallSurvivesWithStretch: a process that was late once (a short
// stall) says so in its ACKUPDATEs; stalled again for longer than one
// window (400 ms against 300 ms), it keeps its place with Stretch 3: its
// own clock counts the ALIVEs of before the stall for more windows, and
// its predecessor waits longer before suspecting it. With Stretch 1 (no
// local health) the same stall excludes it. Theorem 4.1 is checked at
// every step in both.
func TestSimStallSurvivesWithStretch(t *testing.T) {
	for _, c := range []struct {
		stretch int
		keeps   bool
	}{{3, true}, {1, false}} {
		kept := 0
		seeds := sim.Seeds()
		if len(seeds) > 20 {
			seeds = seeds[:20]
		}
		for _, seed := range seeds {
			p, excluded, err := stretchPool(seed, c.stretch, 0)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			victim := p.coreOf()[int(seed)%len(p.coreOf())]
			if err := p.pauseFor(victim, 150*time.Millisecond); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if err := p.s.RunFor(300 * time.Millisecond); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if err := p.pauseFor(victim, 400*time.Millisecond); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if err := p.s.RunFor(2 * time.Second); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			for id, n := range excluded {
				if id != victim && n > 0 {
					t.Fatalf("seed %d, stretch %d: process %d lost its support though only %d stalled", seed, c.stretch, id, victim)
				}
			}
			if excluded[victim] == 0 {
				kept++
			}
		}
		if c.keeps && kept != len(seeds) {
			t.Errorf("stretch %d: the stalled process kept its place in %d of %d seeds, want all", c.stretch, kept, len(seeds))
		}
		if !c.keeps && kept != 0 {
			t.Errorf("stretch %d: the stalled process kept its place in %d of %d seeds, want none (the stall is longer than a window)", c.stretch, kept, len(seeds))
		}
		t.Logf("stretch %d: a 400 ms stall (window 300 ms) kept its place in %d of %d seeds", c.stretch, kept, len(seeds))
	}
}

// stretchCut: a core member is cut off from every other process and,
// while cut off, stalls again and again (a starved host): each late round
// raises its local-health factor, so it counts its last ALIVEs for more
// windows, and nobody outside hears of it. Its predecessor excludes it.
// Theorem 4.1 (settledPool's invariant) must hold: the excluded member
// must stop acting before its ticket is handed out again.
func stretchCut(seed uint64, b bug) error {
	p, _, err := stretchPool(seed, maxStretch, b)
	if err != nil {
		return err
	}
	victim := p.coreOf()[int(seed)%len(p.coreOf())]
	p.s.Isolate(victim)
	for range maxStretch {
		if err := p.s.RunFor(40 * time.Millisecond); err != nil {
			return err
		}
		if err := p.pauseFor(victim, 160*time.Millisecond); err != nil {
			return err
		}
	}
	if err := p.s.RunFor(5 * time.Second); err != nil {
		return err
	}
	if h := p.machines[victim].Health(); h < 4 {
		return fmt.Errorf("the cut-off member's health reached only %d", h)
	}
	return nil
}

// TestSimStretchSafety: the inequality of doc.go ("Busy hosts"): however a
// starved process stretches its support, a voter's ban and the temporary
// coordinator's wait count with Stretch windows, so the support ends
// first. The planted bug bugNoStretchWait waits out one window only, and
// Theorem 4.1 catches it.
func TestSimStretchSafety(t *testing.T) {
	seeds := sim.Seeds()
	if len(seeds) > 50 {
		seeds = seeds[:50]
	}
	for _, seed := range seeds {
		if err := stretchCut(seed, 0); err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./pkg/ticket -run TestSimStretchSafety -seed %d", seed, err, seed)
		}
	}
	caught := 0
	var first error
	for _, seed := range seeds {
		if err := stretchCut(seed, bugNoStretchWait); err != nil {
			caught++
			if first == nil {
				first = err
			}
		}
	}
	if caught == 0 {
		t.Fatalf("planted bug (support stretched, wait not) never caught in %d seeds", len(seeds))
	}
	t.Logf("%d seeds safe; the planted bug caught in %d of them, e.g. %v", len(seeds), caught, first)
}
