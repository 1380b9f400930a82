package mutex

import (
	"math/big"
	"testing"
)

// TestVotingRiskSeedExample: Tanenbaum's example for Lin et al.'s voting
// with forgetful coordinators: n = 32, m = 0.75n = 24, a node taking part
// for about 3 hours and Δt = 10 s (p = 10 s / 3 h = 1/1080) gives a
// violation probability below 10⁻⁴⁰; so does p = 0.001.
func TestVotingRiskSeedExample(t *testing.T) {
	limit := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(40), nil))
	for _, p := range []*big.Rat{big.NewRat(1, 1080), big.NewRat(1, 1000)} {
		pv, err := VotingRisk(32, 24, p)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := pv.Float64()
		t.Logf("n 32 m 24 p %s: p_v %.3g", p.FloatString(6), f)
		if pv.Sign() <= 0 || pv.Cmp(limit) >= 0 {
			t.Errorf("p %s: p_v %.3g, want in (0, 1e-40)", p.FloatString(6), f)
		}
	}
}

// TestVotingRiskSmall: hand-computed cases. n = 3, m = 2: one reset of
// the two voters suffices (2m − n = 1): 1 − (1 − p)² = 0.19 at p = 0.1.
// n = m: every voter must reset: p^m. A majority of all needs no reset at
// p = 0: zero.
func TestVotingRiskSmall(t *testing.T) {
	for _, c := range []struct {
		n, m int
		p    *big.Rat
		want *big.Rat
	}{
		{3, 2, big.NewRat(1, 10), big.NewRat(19, 100)},
		{4, 4, big.NewRat(1, 2), big.NewRat(1, 16)},
		{5, 3, big.NewRat(0, 1), big.NewRat(0, 1)},
		{5, 3, big.NewRat(1, 1), big.NewRat(1, 1)},
		// 2m − n = 2 of 4: C(4,2)p²q² + C(4,3)p³q + p⁴ at p = 1/2 = 11/16.
		{6, 4, big.NewRat(1, 2), big.NewRat(11, 16)},
	} {
		got, err := VotingRisk(c.n, c.m, c.p)
		if err != nil || got.Cmp(c.want) != 0 {
			t.Errorf("n %d m %d p %s: %v %v, want %s", c.n, c.m, c.p, got, err, c.want)
		}
	}
	for _, c := range []struct {
		n, m int
		p    *big.Rat
	}{{4, 2, big.NewRat(1, 2)}, {4, 5, big.NewRat(1, 2)}, {0, 0, big.NewRat(1, 2)}, {3, 2, big.NewRat(-1, 2)}, {3, 2, big.NewRat(3, 2)}} {
		if _, err := VotingRisk(c.n, c.m, c.p); err == nil {
			t.Errorf("n %d m %d p %s accepted", c.n, c.m, c.p)
		}
	}
}
