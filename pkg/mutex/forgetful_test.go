package mutex

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// forgetfulTrial is one period Δt of Lin et al.'s model (Tanenbaum ch. 6,
// "Decentralized Mutual Exclusion"): requester A holds the votes of m of
// the n coordinators; each of those crashes and recovers within the period
// with probability p; then requester B asks all n at once, as the seed's
// requester does, and counts the votes it is granted. It reports whether
// B got m votes while A still holds its lock: a violation. The
// coordinators are the voting machine's own (handle), restarted as new
// machines; with forget, a restarted one votes at once, without, it stays
// quiet for a lease as lockd's does.
func forgetfulTrial(t *testing.T, r *rand.Rand, n, m int, p float64, forget bool) bool {
	ids := make([]node.ID, n)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	const a, b = node.ID(1001), node.ID(1002) // the requesters (their own coordinators are not among the n)
	const lease = time.Second
	fresh := func(id node.ID) *voting {
		v, err := newVoting(Config{ID: id, Peers: ids, Quorum: m, Lease: lease, Rand: rand.New(rand.NewPCG(uint64(id), 1)), forgetVotes: forget})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	coords := make([]*voting, n)
	for i, id := range ids {
		coords[i] = fresh(id)
		coords[i].begin(t0.Add(-time.Hour)) // up long before the period
	}
	ask := func(v *voting, now time.Time, from node.ID) bool {
		v.begin(now)
		v.handle(now, from, Msg{Type: MsgVRequest, Name: "x", Attempt: 1})
		out := v.out
		v.out = nil
		return len(out) == 1 && out[0].To == from && out[0].Msg.Type == MsgVGrant
	}
	now := t0
	voters := r.Perm(n)[:m]
	for _, i := range voters {
		if !ask(coords[i], now, a) {
			t.Fatalf("coordinator %d denied the first requester", ids[i])
		}
	}
	// Within the period (well inside A's lease), some voters crash and
	// recover.
	now = now.Add(lease / 10)
	for _, i := range voters {
		if r.Float64() < p {
			coords[i] = fresh(ids[i])
			coords[i].begin(now)
		}
	}
	now = now.Add(time.Millisecond)
	got := 0
	for _, v := range coords {
		if ask(v, now, b) {
			got++
		}
	}
	return got >= m
}

// TestForgetfulCoordinators reproduces the seed's robustness figure: with
// coordinators that forget their votes when they restart, the share of
// periods in which a second requester gathers m votes while the first
// holds them matches P_v = Σ_{k=2m−n}^{m} C(m,k) p^k (1−p)^(m−k)
// (VotingRisk, 'lockd voting-risk') within four standard errors; with
// lockd's rule (a restarted coordinator votes for nobody during its first
// lease) it is zero.
func TestForgetfulCoordinators(t *testing.T) {
	const trials = 8000
	for _, c := range []struct {
		n, m int
		p    float64
	}{{5, 3, 0.1}, {7, 5, 0.2}, {9, 7, 0.3}, {8, 7, 0.5}} {
		want, err := VotingRisk(c.n, c.m, new(big.Rat).SetFloat64(c.p))
		if err != nil {
			t.Fatal(err)
		}
		pv, _ := want.Float64()
		r := rand.New(rand.NewPCG(uint64(c.n*100+c.m), 7))
		bad, leased := 0, 0
		for range trials {
			if forgetfulTrial(t, r, c.n, c.m, c.p, true) {
				bad++
			}
			if forgetfulTrial(t, r, c.n, c.m, c.p, false) {
				leased++
			}
		}
		rate := float64(bad) / trials
		se := math.Sqrt(pv * (1 - pv) / trials)
		t.Logf("n=%d m=%d p=%.2f: forgetful coordinators %d/%d violations = %.4f, the seed's P_v = %.4f (±%.4f); lockd's vote leases: %d",
			c.n, c.m, c.p, bad, trials, rate, pv, se, leased)
		if math.Abs(rate-pv) > 4*se {
			t.Errorf("n=%d m=%d p=%.2f: violation rate %.4f, the seed's formula gives %.4f (4 standard errors: %.4f)", c.n, c.m, c.p, rate, pv, 4*se)
		}
		if leased != 0 {
			t.Errorf("n=%d m=%d p=%.2f: %d violations with vote leases, want 0", c.n, c.m, c.p, leased)
		}
	}
}
