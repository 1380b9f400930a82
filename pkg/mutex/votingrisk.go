package mutex

import (
	"fmt"
	"math/big"
)

// VotingRisk is the probability that the voting algorithm with forgetful
// coordinators violates mutual exclusion, as Tanenbaum ch. 6 states it for Lin et
// al.'s decentralized algorithm ("Decentralized Mutual Exclusion"): every
// resource has n replicas, each with a coordinator; access needs m > n/2
// votes; a coordinator that crashes and recovers within a period Δt
// (probability p) forgets the votes it gave. The probability that k of the
// m coordinators that voted reset is
//
//	P[k] = C(m, k) p^k (1 − p)^(m−k)
//
// and a second requester can gather m votes once at least 2m − n of them
// have reset, so the violation probability is Σ_{k=2m−n}^{n} P[k] (terms
// with k > m are zero). It is computed exactly.
//
// lockd's voting machine (voting.go) does not take this risk: votes are
// leases, and a restarted coordinator votes for nobody during its first
// lease, by when every vote it may have forgotten has run out; so no
// forgotten vote is ever given twice.
func VotingRisk(n, m int, p *big.Rat) (*big.Rat, error) {
	if n < 1 || 2*m <= n || m > n {
		return nil, fmt.Errorf("mutex: need n/2 < m ≤ n and n ≥ 1 (got m %d of n %d)", m, n)
	}
	if p.Sign() < 0 || p.Cmp(big.NewRat(1, 1)) > 0 {
		return nil, fmt.Errorf("mutex: probability must be in [0, 1]")
	}
	q := new(big.Rat).Sub(big.NewRat(1, 1), p)
	sum := new(big.Rat)
	for k := 2*m - n; k <= m; k++ {
		t := new(big.Rat).SetInt(new(big.Int).Binomial(int64(m), int64(k)))
		t.Mul(t, ratPow(p, k))
		t.Mul(t, ratPow(q, m-k))
		sum.Add(sum, t)
	}
	return sum, nil
}

func ratPow(x *big.Rat, e int) *big.Rat {
	out := big.NewRat(1, 1)
	for range e {
		out.Mul(out, x)
	}
	return out
}
