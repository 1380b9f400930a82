package ticket

import (
	"fmt"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// strandedRun plays the schedule of doc.go's "Why a stranded process is
// not re-supported" (first rule), k = 1: in a settled core of 8, member c
// is cut off both ways from its successor b and b's successor a, both
// alive, and excludes them (E = {b, a}, a's successor answers). Its
// REQCOORDs to its own predecessor d are lost, so c's quorum is itself
// and e, and d goes on vouching for a. b (L = {c, d, e}) loses its
// support; a (L = {b, c, d}) keeps d alone, and loses its support too,
// unless b vouches on after losing its own (bugStrandedVouch): then a acts
// when c hands its ticket out. Returns whether the run got that far (the
// exclusion's quorum formed without d) and what the checkers said.
func strandedRun(seed uint64, b bug) (formed bool, err error) {
	p, err := settledPoolWith(seed, 9, 8, 1, 0, 0, 0, func(c *Config) { c.bug = b })
	if err != nil {
		return false, err
	}
	s, r := p.s, p.r
	s.OnEvent = nil // exclusions are expected from here on
	// Every message takes 2 to 4 ms from here on, so that a REQCOORD to d
	// is seen in flight and dropped.
	s.SetLatency(2*time.Millisecond, 4*time.Millisecond)
	if err := s.RunFor(time.Duration(r.Int64N(int64(300 * time.Millisecond)))); err != nil {
		return false, err
	}
	core := p.coreOf()
	c := core[r.IntN(len(core))]
	mc := p.machines[c]
	bID := mc.succ
	aID := p.machines[bID].succ
	d := mc.pred
	if bID == c || aID == c || d == c || d == node.None {
		return false, nil
	}
	for _, v := range []node.ID{bID, aID} {
		s.Cut(c, v)
		s.Cut(v, c)
	}
	const step = 500 * time.Microsecond
	tempSeen, dBanned := false, false
	defer func() { formed = tempSeen && !dBanned }()
	for t := time.Duration(0); t < 4*time.Second; t += step {
		if ex := mc.ex; ex != nil && ex.asked && s.Alive(c) {
			s.DropInFlight(c, d) // the REQCOORD to d, and its resends
		}
		if mc.temp != nil {
			tempSeen = true
		}
		if md := p.machines[d]; md.banned(s.LocalNow(d), p.machines[aID].ticket) {
			dBanned = true
		}
		if err := s.RunFor(step); err != nil {
			return false, fmt.Errorf("c %d excluding b %d and a %d, d %d: %w", c, bID, aID, d, err)
		}
	}
	return false, nil
}

// TestSimStrandedVouchUnsafe: the schedule above keeps Theorem 4.1 with
// the rules as they are, and catches a process that vouches on after it
// lost its support (bugStrandedVouch), the first re-support rule doc.go
// rules out.
func TestSimStrandedVouchUnsafe(t *testing.T) {
	const seeds = 20
	formed := 0
	caught := simtest.Catch(t, "bugStrandedVouch", seeds, func(seed uint64) error {
		ok, err := strandedRun(seed, 0)
		if err != nil {
			t.Fatalf("seed %d: %v\nreplay: %s", seed, err, simtest.Replay(t, seed))
		}
		if !ok {
			return nil
		}
		formed++
		_, err = strandedRun(seed, bugStrandedVouch)
		return err
	})
	t.Logf("%d of %d seeds reached a quorum without d and kept Theorem 4.1; bugStrandedVouch caught in %d of them", formed, seeds, caught)
}
