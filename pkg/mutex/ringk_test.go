package mutex

import (
	"fmt"
	"math/big"
	"testing"
)

// bruteRing counts placements by enumeration, for small rings.
func bruteRing(n, f, k int) int64 {
	var count int64
	for mask := 0; mask < 1<<n; mask++ {
		ones := 0
		for i := 0; i < n; i++ {
			ones += mask >> i & 1
		}
		if ones != f {
			continue
		}
		ok := true
		for start := 0; start < n && ok; start++ {
			run := 0
			for i := 0; i < n; i++ {
				if mask>>((start+i)%n)&1 == 1 {
					run++
					if run > k {
						ok = false
						break
					}
				} else {
					break
				}
			}
		}
		if ok {
			count++
		}
	}
	return count
}

func TestRingWMatchesEnumeration(t *testing.T) {
	for n := 2; n <= 12; n++ {
		for f := 0; f <= n; f++ {
			for k := 0; k <= n; k++ {
				if got, want := RingW(n, f, k), bruteRing(n, f, k); got.Int64() != want {
					t.Fatalf("W_%d(%d, %d) = %v, enumeration says %d", k, f, n, got, want)
				}
			}
		}
	}
}

// TestRingKReproducesThePaper: Arantes–Sopena §IV reads its thresholds off plots:
// for N = 10,000, k = 8 tolerates 10% crashes and k = 20 tolerates 50%
// "with a probability closer to 100%". Exactly: P_8(1000, 10000) = 0.99999
// (k = 7 gives 0.99991) and P_20(5000, 10000) = 0.9977 (k = 19 gives 0.9953),
// so the paper's 8 is the answer at p = 0.99999 and its 20 at p = 0.997.
func TestRingKReproducesThePaper(t *testing.T) {
	for _, c := range []struct {
		f    int
		p    *big.Rat
		want int
	}{
		{1000, big.NewRat(99999, 100000), 8},
		{5000, big.NewRat(997, 1000), 20},
	} {
		k, p, err := RingK(10000, c.f, c.p)
		if err != nil || k != c.want {
			t.Fatalf("N=10000 f=%d p≥%s: k=%d (%v), want %d", c.f, c.p.FloatString(5), k, err, c.want)
		}
		below := RingP(10000, c.f, k-1)
		t.Logf("N=10000 f=%d: k=%d with P=%s (k=%d: %s)", c.f, k, p.FloatString(7), k-1, below.FloatString(7))
	}
}

func ExampleRingK() {
	k, p, _ := RingK(100, 10, big.NewRat(99, 100))
	fmt.Println(k, p.FloatString(4))
	// Output: 3 0.9950
}
