package ticket

import (
	"fmt"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// chainResult is what one run of chainRun saw.
type chainResult struct {
	formed   bool          // the exclusion's quorum formed without d, E = {b, a}
	aLast    time.Duration // a's last instant acting, after the quorum (global time)
	reclaim  time.Duration // c's reclaim, after the quorum
	bLast    time.Duration // b's last instant acting, after the quorum
	bHealth  int           // b's factor when it stopped
	tempWait time.Duration // c's temporary wait
}

// chainRun plays the chain inside E_pq of doc.go's "Safety" (k = 1,
// Stretch 3): in a settled core of 8, c is cut off both ways from its
// successor b and b's successor a, both alive, and excludes E = {b, a}
// (a's successor answers); its REQCOORDs to its predecessor d are lost,
// so its quorum is itself and e, and d vouches on. b (L = {c, d, e})
// keeps d alone once e's ban starts, and stops one stretched vouch after
// e's last ALIVE; a (L = {b, c, d}) keeps d and b, so it stays supported
// for one stretched vouch after b's last ALIVE: two stretched vouches
// after the ban. b is stalled for 150 ms every 500 ms from before the cut
// to its end, so its factor stays at 3 and its ALIVEs vouch for three
// windows; which of b's rounds is its last before its support ends
// follows from the seed's phases. Theorem 4.1 (settledPool's invariant)
// is checked after every event.
func chainRun(seed uint64, b bug) (res chainResult, err error) {
	p, err := settledPoolWith(seed, 9, 8, 1, 0, 0, 0, func(c *Config) { c.Stretch, c.bug = 3, b })
	if err != nil {
		return res, err
	}
	s, r := p.s, p.r
	s.OnEvent = nil // exclusions are expected from here on
	s.SetLatency(2*time.Millisecond, 4*time.Millisecond)
	if err := s.RunFor(time.Duration(r.Int64N(int64(300 * time.Millisecond)))); err != nil {
		return res, err
	}
	core := p.coreOf()
	c := core[r.IntN(len(core))]
	mc := p.machines[c]
	bID := mc.succ
	aID := p.machines[bID].succ
	d := mc.pred
	if bID == c || aID == c || d == c || d == node.None || aID == bID {
		return res, nil
	}
	mb, ma := p.machines[bID], p.machines[aID]
	// Raise b's factor to 3 before the cut: two late rounds.
	for range 2 {
		if err := p.pauseFor(bID, 150*time.Millisecond); err != nil {
			return res, err
		}
		if err := s.RunFor(40 * time.Millisecond); err != nil {
			return res, err
		}
	}
	for _, v := range []node.ID{bID, aID} {
		s.Cut(c, v)
		s.Cut(v, c)
	}
	const step = 500 * time.Microsecond
	var quorumAt, aLast, bLast, reclaimAt time.Duration
	tempSeen, dBanned, aligned := false, false, false
	phase := time.Duration(r.Int64N(int64(500 * time.Millisecond)))
	var pausedUntil time.Duration
	for t := time.Duration(0); t < 8*time.Second; t += step {
		if ex := mc.ex; ex != nil && ex.asked && s.Alive(c) {
			s.DropInFlight(c, d) // the REQCOORD to d, and its resends
		}
		if mc.temp != nil && !tempSeen {
			tempSeen, quorumAt = true, t
			res.tempWait = mc.temp.until.Sub(s.LocalNow(c))
		}
		if tempSeen && reclaimAt == 0 && mc.temp == nil {
			reclaimAt = t
		}
		if md := p.machines[d]; md.banned(s.LocalNow(d), ma.ticket) {
			dBanned = true
		}
		// b stalls 150 ms every 500 ms while it still acts, and once the
		// quorum has formed, last from 120 ms before its support ends to
		// 1 ms before: the round it runs on waking is its last, and
		// sends a its last ALIVE as late as b's support allows.
		left := mb.SupportedUntil().Sub(s.LocalNow(bID))
		if pausedUntil != 0 && (t >= pausedUntil || aligned && left <= time.Millisecond) {
			s.Resume(bID)
			pausedUntil = 0
		}
		switch {
		case aligned || mb.st != stCoordinator:
		case tempSeen && t > quorumAt+20*time.Millisecond && left <= 120*time.Millisecond:
			if pausedUntil == 0 {
				s.Pause(bID)
			}
			aligned, pausedUntil = true, t+time.Second
		case pausedUntil == 0 && (t+phase)%(500*time.Millisecond) < step && (!tempSeen || left > 300*time.Millisecond):
			s.Pause(bID)
			pausedUntil = t + 150*time.Millisecond
		}
		if mb.MayAct(s.LocalNow(bID)) {
			bLast = t
			res.bHealth = mb.Health()
		}
		if ma.MayAct(s.LocalNow(aID)) {
			aLast = t
		}
		if err := s.RunFor(step); err != nil {
			return res, fmt.Errorf("c %d excluding b %d and a %d, d %d: %w", c, bID, aID, d, err)
		}
	}
	if pausedUntil != 0 {
		s.Resume(bID)
	}
	res.formed = tempSeen && !dBanned
	if tempSeen {
		res.aLast, res.bLast, res.reclaim = aLast-quorumAt, bLast-quorumAt, reclaimAt-quorumAt
	}
	return res, nil
}

// TestSimChainInExcluded: the chain inside E_pq (doc.go, "Safety: a
// chain inside E_pq") stays inside the excluder's wait: a stops at most
// two links (δ plus Stretch windows each, with drift) after the quorum,
// which the wait covers, and Theorem 4.1 holds at every step. With the
// wait counting one stretched vouch whatever the size of E_pq
// (bugOneVouchChain), Theorem 4.1 catches a acting on a reclaimed ticket.
func TestSimChainInExcluded(t *testing.T) {
	seeds := sim.Seeds()
	if len(seeds) > 40 {
		seeds = seeds[:40]
	}
	formed, longest := 0, time.Duration(0)
	for _, seed := range seeds {
		res, err := chainRun(seed, 0)
		if err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./pkg/ticket -run TestSimChainInExcluded -seed %d", seed, err, seed)
		}
		if !res.formed {
			continue
		}
		formed++
		// The bound the argument gives (100 ms rounds, 300 ms windows,
		// Stretch 3, δ 50 ms, ρ 0.01), and 20 ms of the harness's steps.
		const link = (50*time.Millisecond + 900*time.Millisecond) * 102 / 100
		if res.aLast > 2*link+20*time.Millisecond {
			t.Errorf("seed %d: a acted %v after the quorum, beyond two links (%v)", seed, res.aLast, 2*link)
		}
		if res.reclaim < res.aLast {
			t.Errorf("seed %d: reclaimed %v after the quorum, a acted until %v", seed, res.reclaim, res.aLast)
		}
		longest = max(longest, res.aLast)
	}
	if formed == 0 {
		t.Fatalf("no seed of %d formed the quorum without d", len(seeds))
	}
	t.Logf("%d of %d seeds formed the quorum without d; a acted at most %v after it", formed, len(seeds), longest)
	simtest.Catch(t, "bugOneVouchChain", 20, func(seed uint64) error {
		_, err := chainRun(seed, bugOneVouchChain)
		return err
	}, "in the ranges of both")
}
