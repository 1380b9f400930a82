package ticketsim

import (
	"testing"

	"github.com/roundtable-go/roundtable/pkg/ticket"
)

// TestSettledAlivesCount: the accounting of settled process-rounds counts
// a round only when the process was settled and ran exactly one of its
// rounds, and a planted excess (a fourth ALIVE with k = 1) shows in the
// maximum that TestSimSettledAlives bounds.
func TestSettledAlivesCount(t *testing.T) {
	var a settledAlives
	b := ticket.Counts{Rounds: 5, AliveSent: 10}
	a.add(b, ticket.Counts{Rounds: 6, AliveSent: 13}, true)
	a.add(b, ticket.Counts{Rounds: 7, AliveSent: 16}, true)  // two rounds: not counted
	a.add(b, ticket.Counts{Rounds: 6, AliveSent: 14}, false) // not settled
	a.add(b, ticket.Counts{Rounds: 6, AliveSent: 13, AliveFormer: 1}, true)
	if a.rounds != 2 || a.closest != 6 || a.former != 1 || a.maxClosest != 3 || a.maxAll != 4 {
		t.Fatalf("%+v", a)
	}
	a.add(b, ticket.Counts{Rounds: 6, AliveSent: 14}, true) // planted: 4 > 2k+1
	if a.maxClosest != 4 {
		t.Fatalf("a fourth ALIVE went unseen: %+v", a)
	}
}

// TestSimSettledAlives: the seed's §4.2 ("Message overhead"): in a round
// a settled process sends at most 2k+1 ALIVEs to its closest successors,
// for k = 1 and 2, under churn (crashes and joins). ALIVEs to successors
// a join pushed out of the 2k+1 stop once the new R has reached them:
// under 0.05 per settled process-round.
func TestSimSettledAlives(t *testing.T) {
	rounds := 150
	if raceEnabled {
		rounds = 60
	}
	for _, k := range []int{1, 2} {
		r, err := Simulate(SimConfig{Processes: 200, Tickets: 50, K: k, PF: 0.02, Alpha: 0.8, Rounds: rounds, Seed: 3, Paper: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("k %d: %d settled process-rounds, ALIVEs %.3f on average, %d at most; former %.3f, %d at most; crashes %d",
			k, r.SettledRounds, r.AliveSettledMean, r.AliveSettledMax, r.AliveFormerMean, r.AliveFormerMax, r.Crashes)
		if r.SettledRounds < 1000 || r.Crashes == 0 {
			t.Fatalf("k %d: too little measured: %+v", k, r)
		}
		if r.AliveSettledMax > 2*k+1 || r.AliveSettledMean > float64(2*k+1) {
			t.Errorf("k %d: settled ALIVEs %.3f on average, %d at most; want at most 2k+1 = %d", k, r.AliveSettledMean, r.AliveSettledMax, 2*k+1)
		}
		if r.AliveFormerMean > 0.05 {
			t.Errorf("k %d: %.3f ALIVEs per settled process-round to former successors, want under 0.05", k, r.AliveFormerMean)
		}
	}
}
