package ticket

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

var (
	wholeHostStall   = flag.Bool("whole-host-stall", false, "run TestSimKillThenWholeHostStalls, which fails with ticketd's stretch (doc.go, \"Busy hosts: a stall of the whole host\")")
	wholeHostStretch = flag.Int("whole-host-stretch", 3, "Config.Stretch for TestSimKillThenWholeHostStalls (ticketd's is 3)")
)

// pauseAll stalls every live process in ids together for d (a stall of
// the whole host: every process on it unscheduled at once).
func (p *pool) pauseAll(ids []node.ID, d time.Duration) error {
	for _, id := range ids {
		p.s.Pause(id)
	}
	if err := p.s.RunFor(d); err != nil {
		return err
	}
	for _, id := range ids {
		p.s.Resume(id)
	}
	return nil
}

// killThenStalls: three processes on one busy host as ticketd runs them
// (k = 1, 4 tickets, 40 ms rounds, windows of 3 rounds, Config.Stretch
// stretch, a Margin of 190 ms). The host runs late first (whole-host
// stalls of 30 to 60 ms, so every factor climbs), then one process is
// SIGKILLed, and while the survivors repair the ring the whole host
// stalls three times for 0.4 to 0.6 s, with 100 to 300 ms of running
// between. It returns how often a survivor lost its support and how long
// until a survivor reclaimed the killed process's ticket (zero: never);
// Theorem 4.1 is checked after every event (settledPoolWith's
// invariant).
func killThenStalls(seed uint64, stretch int, b bug) (lost int, reclaim time.Duration, err error) {
	p, err := settledPoolWith(seed, 3, 4, 1, 3, 190*time.Millisecond, 0, func(c *Config) {
		c.Round, c.Stretch, c.bug = 40*time.Millisecond, stretch, b
	})
	if err != nil {
		return 0, 0, err
	}
	settled := func() bool {
		core := p.coreOf()
		for _, id := range core {
			if !p.machines[id].Settled(p.s.LocalNow(id)) {
				return false
			}
		}
		return len(core) == 3
	}
	for i := 0; !settled(); i++ {
		if i == 300 {
			return 0, 0, fmt.Errorf("no settled core of 3: %v", p.coreOf())
		}
		if err := p.s.RunFor(10 * time.Millisecond); err != nil {
			return 0, 0, err
		}
	}
	var victim node.ID
	var ticket uint32
	var killedAt, takenAt time.Time
	p.s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if *traceFlag {
			fmt.Printf("%v %d %v\n", at.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), id, ev)
		}
		switch e := ev.(type) {
		case ExcludedEvent:
			if id != victim {
				lost++
			}
		case ReclaimedEvent:
			if victim != 0 && slices.Contains(e.Excluded, victim) && takenAt.IsZero() {
				takenAt = at
			}
		}
		return nil
	}
	// A busy host: every process runs late together, so every factor
	// climbs (a round half a round late raises it by one).
	for range 2 * maxStretch {
		if err := p.pauseAll(p.ids, 30*time.Millisecond+time.Duration(p.r.Int64N(int64(30*time.Millisecond)))); err != nil {
			return 0, 0, err
		}
		if err := p.s.RunFor(5*time.Millisecond + time.Duration(p.r.Int64N(int64(15*time.Millisecond)))); err != nil {
			return 0, 0, err
		}
	}
	core := p.coreOf()
	if len(core) != 3 {
		return 0, 0, fmt.Errorf("the busy host alone cost the core a process: %v", core)
	}
	victim = core[p.r.IntN(len(core))]
	ticket = p.machines[victim].ticket
	killedAt = p.s.Now()
	if *traceFlag {
		fmt.Printf("-- kill %d (ticket %d) at %v\n", victim, ticket, killedAt)
	}
	p.s.Crash(victim)
	var survivors []node.ID
	for _, id := range p.ids {
		if id != victim {
			survivors = append(survivors, id)
		}
	}
	for range 3 {
		if err := p.s.RunFor(100*time.Millisecond + time.Duration(p.r.Int64N(int64(200*time.Millisecond)))); err != nil {
			return 0, 0, err
		}
		if err := p.pauseAll(survivors, 400*time.Millisecond+time.Duration(p.r.Int64N(int64(200*time.Millisecond)))); err != nil {
			return 0, 0, err
		}
	}
	if err := p.s.RunFor(3 * time.Second); err != nil {
		return 0, 0, err
	}
	if !takenAt.IsZero() {
		reclaim = takenAt.Sub(killedAt)
	}
	return lost, reclaim, nil
}

// TestSimKillThenWholeHostStalls: one SIGKILL in a pool of 3 with k = 1,
// then the whole host stalls for 0.4 to 0.6 s, three times, during the
// repair: no survivor may lose its support, and a survivor must reclaim
// the killed ticket. With ticketd's Stretch (3: vouches of at most 360 ms)
// the survivors lose their support in every seed, which ends the pool:
// nothing a process reads after such a stall was sent after a stamp of
// its own from before it. Skipped unless -whole-host-stall is given
// (doc.go, "Busy hosts: a stall of the whole host").
func TestSimKillThenWholeHostStalls(t *testing.T) {
	if !*wholeHostStall {
		t.Skip("fails with ticketd's stretch: -whole-host-stall runs it (doc.go, \"Busy hosts: a stall of the whole host\")")
	}
	seeds := sim.Seeds()
	if len(seeds) > 50 {
		seeds = seeds[:50]
	}
	for _, seed := range seeds {
		lost, reclaim, err := killThenStalls(seed, *wholeHostStretch, 0)
		if err != nil || lost > 0 || reclaim == 0 {
			t.Fatalf("seed %d, stretch %d: survivors lost their support %d times, the killed ticket reclaimed after %v (0: never) (%v)\nreplay: go test ./pkg/ticket -run TestSimKillThenWholeHostStalls -whole-host-stall -whole-host-stretch %d -seed %d",
				seed, *wholeHostStretch, lost, reclaim, err, *wholeHostStretch, seed)
		}
	}
	t.Logf("%d seeds, stretch %d: no survivor lost its support, the killed ticket reclaimed in every one", len(seeds), *wholeHostStretch)
}
