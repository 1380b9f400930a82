package ticket

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// leaveRun: a settled core of four (k = 1, one more process waiting
// outside), one of its processes (the leaver) is asked to give its ticket
// back. silent: another process of the core is cut off just before.
// lend: the leaver lends its ticket before the answers are in. It reports
// the leaver's LeaveHeldEvents and whether it left.
func leaveRun(seed uint64, b bug, silent, lend bool) (held []LeaveHeldEvent, left bool, victim node.ID, err error) {
	p, err := settledPoolWith(seed, 5, 4, 1, 0, 100*time.Millisecond, 0, func(c *Config) { c.bug = b })
	if err != nil {
		return nil, false, 0, err
	}
	core := p.coreOf()
	leaver := core[p.r.IntN(len(core))]
	s := p.s
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if e, ok := ev.(LeaveHeldEvent); ok && id == leaver {
			held = append(held, e)
		}
		return nil
	}
	if silent {
		others := slices.DeleteFunc(slices.Clone(core), func(id node.ID) bool { return id == leaver })
		victim = others[p.r.IntN(len(others))]
		s.Isolate(victim)
	}
	s.Inject(leaver, Msg{Type: MsgLeave})
	if err := s.RunFor(50 * time.Microsecond); err != nil { // the pings are on their way
		return held, false, victim, err
	}
	m := p.machines[leaver]
	if m.leaveCheck == nil {
		return held, false, victim, fmt.Errorf("process %d gave its ticket back without asking its neighbours (state %v)", leaver, m.st)
	}
	if lend {
		if _, ok := m.Lend(s.LocalNow(leaver)); !ok {
			return held, false, victim, fmt.Errorf("process %d could not lend while its leave waited", leaver)
		}
	}
	if err := s.RunFor(300 * time.Millisecond); err != nil {
		return held, false, victim, err
	}
	return held, m.Done() || m.st == stLeaving, victim, nil
}

// TestLeaveAsksNeighbours: a leave goes ahead once every neighbour has
// answered; with one of them cut off, the ticket is kept and the event
// names it; a lend while the answers are on their way keeps the ticket
// too (it is lent: giving it back would hand a held ticket on).
func TestLeaveAsksNeighbours(t *testing.T) {
	simtest.EverySeedOf(t, simtest.AtLeast(20), func(seed uint64) error {
		held, left, _, err := leaveRun(seed, 0, false, false)
		if err != nil {
			return err
		}
		if !left || len(held) > 0 {
			return fmt.Errorf("with every neighbour answering: left %v, kept %v", left, held)
		}
		held, left, victim, err := leaveRun(seed, 0, true, false)
		if err != nil {
			return err
		}
		if left || len(held) != 1 || !slices.Contains(held[0].Silent, victim) {
			return fmt.Errorf("with %d cut off: left %v, kept %v", victim, left, held)
		}
		return lendKeeps(seed, 0)
	})
}

// lendKeeps: a lend while the answers are on their way keeps the ticket.
func lendKeeps(seed uint64, b bug) error {
	held, left, _, err := leaveRun(seed, b, false, true)
	if err != nil {
		return err
	}
	if left || len(held) != 1 {
		return fmt.Errorf("lent while its leave waited for answers: left %v (with the ticket lent), kept %v", left, held)
	}
	return nil
}

func TestLeaveAsksNeighboursCatchesLendKeepsLeave(t *testing.T) {
	simtest.Catch(t, "a lend leaves the pending leave in place", 10, func(seed uint64) error {
		return lendKeeps(seed, bugLendKeepsLeave)
	}, "with the ticket lent")
}
