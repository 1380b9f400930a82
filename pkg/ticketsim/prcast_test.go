package ticketsim

import (
	"math"
	"testing"
)

// TestPrCastTrafficFlat: PrCast over partial views costs each member the
// same few messages per round whatever the group's size (docs/ticketd.md,
// "PrCast over partial views"): from 250 to 4,000 members, membership
// stays at one shuffle and one answer per member and round, PrCast grows
// no faster than ln n (its fanout), and every notice reaches every member
// within TTL rounds.
func TestPrCastTrafficFlat(t *testing.T) {
	sizes := []int{250, 1000, 4000}
	if raceEnabled {
		sizes = sizes[:2] // the simulator runs on one goroutine: the largest is left to the plain run
	}
	var res []PrCastResult
	for _, n := range sizes {
		r, err := SimulatePrCast(PrCastConfig{Processes: n, Rounds: 5, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r.Text())
		if r.Reached < 0.999 || r.Full < r.Notices-1 {
			t.Errorf("%d members: notices reached %.5f of member-notice pairs, %d of %d every member", n, r.Reached, r.Full, r.Notices)
		}
		if r.MembershipMean > 2.2 || r.MembershipMean < 1.5 {
			t.Errorf("%d members: %.2f membership messages per member and round, want about 2 (a shuffle and an answer)", n, r.MembershipMean)
		}
		if r.PrCastMax > 3*(r.Fanout+1) || r.MembershipMax > 4*int(math.Ceil(math.Log(float64(n)))) {
			t.Errorf("%d members: at most %d PrCast and %d membership messages from one member in a round", n, r.PrCastMax, r.MembershipMax)
		}
		res = append(res, r)
	}
	first, last := res[0], res[len(res)-1]
	logRatio := math.Log(float64(last.Processes)) / math.Log(float64(first.Processes))
	if g := last.PrCastMean / first.PrCastMean; g > logRatio {
		t.Errorf("PrCast messages per member and round grew %.2f× from %d to %d members, more than ln n (%.2f×)", g, first.Processes, last.Processes, logRatio)
	}
	if g := last.MembershipMean / first.MembershipMean; g > 1.1 {
		t.Errorf("membership messages per member and round grew %.2f× from %d to %d members", g, first.Processes, last.Processes)
	}
}
