package election

import (
	"fmt"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Checker verifies election safety from the stream of LeaderEvents that
// processes report, whether they come from the simulator or from the stdout
// of real processes:
//
//   - no two processes lead the same term (every report of term T names the
//     same leader);
//   - per process, reported terms never decrease, and a repeated term names
//     the same leader;
//   - no process announces its own leadership of a term twice: a term it
//     led is never led again, across restarts (a restarted process that
//     forgot its term could otherwise win the same owned term and hand
//     out the same fencing number).
//
// Restarted processes keep their history here: a process that restarts must
// not report a term below one it reported before (it persists its term or
// learns the current one before reporting).
type Checker struct {
	leaderOf map[uint64]node.ID
	last     map[node.ID]uint64
	led      map[node.ID]map[uint64]bool
	Reports  int
}

// NewChecker returns an empty checker.
func NewChecker() *Checker {
	return &Checker{leaderOf: map[uint64]node.ID{}, last: map[node.ID]uint64{}, led: map[node.ID]map[uint64]bool{}}
}

// Observe checks one report by process reporter.
func (c *Checker) Observe(reporter node.ID, ev LeaderEvent) error {
	c.Reports++
	if ev.Term == 0 || ev.Leader == node.None {
		return fmt.Errorf("report of leader %d term %d: zero leader or term", ev.Leader, ev.Term)
	}
	if prev, ok := c.leaderOf[ev.Term]; ok && prev != ev.Leader {
		return fmt.Errorf("two leaders for term %d: %d and %d (reported by %d)", ev.Term, prev, ev.Leader, reporter)
	}
	c.leaderOf[ev.Term] = ev.Leader
	if last := c.last[reporter]; ev.Term < last {
		return fmt.Errorf("process %d reported term %d after term %d: terms went backwards", reporter, ev.Term, last)
	}
	c.last[reporter] = ev.Term
	if ev.Leader == reporter {
		if c.led[reporter] == nil {
			c.led[reporter] = map[uint64]bool{}
		}
		if c.led[reporter][ev.Term] {
			return fmt.Errorf("process %d announced its leadership of term %d twice (a term reused after a restart?)", reporter, ev.Term)
		}
		c.led[reporter][ev.Term] = true
	}
	return nil
}

// LeaderOf returns who led term t, as far as reports tell.
func (c *Checker) LeaderOf(t uint64) (node.ID, bool) { l, ok := c.leaderOf[t]; return l, ok }
