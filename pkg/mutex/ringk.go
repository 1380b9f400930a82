package mutex

import (
	"fmt"
	"math/big"
)

// Arantes–Sopena (Arantes–Sopena, §IV) size the number k of backup tokens: a
// token ring with k backups survives as long as no more than k consecutive
// processes crash. P_k(f, N) = W_k(f, N) / C(N, f) is the probability that f
// crashes, placed uniformly at random among N processes on a ring, leave no
// run of more than k consecutive crashed processes.
//
// The seed gives W_k as a recurrence over a chain (place i ≤ k failures,
// then a correct process, and recurse on the rest). It is evaluated here
// exactly, in closed form, which scales to N = 10,000:
//
//   - with m = N − f correct processes, the f failures fall into the m gaps
//     that follow each correct process, at most k per gap; the number of
//     such placements is the coefficient of x^f in (1 + x + … + x^k)^m, by
//     inclusion–exclusion Σ_j (−1)^j C(m, j) C(f − j(k+1) + m − 1, m − 1);
//   - each ring arrangement is counted once per correct process when the
//     ring is cut after it, and each cut sequence arises from N rotations,
//     so W_k(f, N) = N/m × that coefficient (and W = 1 when f = N ≤ k).

// RingW returns W_k(f, N): the number of ways to place f crashed processes
// on a ring of N with no more than k consecutive.
func RingW(n, f, k int) *big.Int {
	if f < 0 || f > n || k < 0 {
		return new(big.Int)
	}
	m := n - f
	if m == 0 {
		if f <= k {
			return big.NewInt(1)
		}
		return new(big.Int)
	}
	// Terms are updated incrementally: C(m, j+1) = C(m, j)·(m−j)/(j+1), and
	// with r = m−1, C(a−(k+1), r) = C(a, r)·Π_{i≤k}(a−r−i) / Π_{i≤k}(a−i),
	// every division exact.
	r := int64(m - 1)
	a := int64(f + m - 1)
	cm := big.NewInt(1)               // C(m, j)
	ca := new(big.Int).Binomial(a, r) // C(a, r)
	sum, term, num, den := new(big.Int), new(big.Int), new(big.Int), new(big.Int)
	for j := 0; j <= m && j*(k+1) <= f; j++ {
		term.Mul(cm, ca)
		if j%2 == 1 {
			sum.Sub(sum, term)
		} else {
			sum.Add(sum, term)
		}
		// advance to j+1
		cm.Mul(cm, big.NewInt(int64(m-j)))
		cm.Quo(cm, big.NewInt(int64(j+1)))
		if (j+1)*(k+1) > f {
			break
		}
		num.Set(ca)
		den.SetInt64(1)
		for i := int64(0); i <= int64(k); i++ {
			num.Mul(num, big.NewInt(a-r-i))
			den.Mul(den, big.NewInt(a-i))
		}
		ca.Quo(num, den)
		a -= int64(k + 1)
	}
	sum.Mul(sum, big.NewInt(int64(n)))
	return sum.Quo(sum, big.NewInt(int64(m)))
}

// RingP returns P_k(f, N) = W_k(f, N) / C(N, f), exactly.
func RingP(n, f, k int) *big.Rat {
	return new(big.Rat).SetFrac(RingW(n, f, k), new(big.Int).Binomial(int64(n), int64(f)))
}

// RingK returns the smallest k such that f crashes among n processes leave
// at most k consecutive ones with probability at least p, and that
// probability.
func RingK(n, f int, p *big.Rat) (int, *big.Rat, error) {
	if n < 2 || f < 0 || f >= n {
		return 0, nil, fmt.Errorf("mutex: need 0 ≤ failures < nodes and nodes ≥ 2 (got %d of %d)", f, n)
	}
	if p.Sign() <= 0 || p.Cmp(big.NewRat(1, 1)) > 0 {
		return 0, nil, fmt.Errorf("mutex: probability must be in (0, 1]")
	}
	for k := 0; k <= f; k++ {
		if pk := RingP(n, f, k); pk.Cmp(p) >= 0 {
			return k, pk, nil
		}
	}
	return f, big.NewRat(1, 1), nil
}
