package superpeer

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/coords"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// check: every member is assigned to a superpeer that is a member and
// serves itself; no superpeer serves more than maxLoad; and the DHT
// lookup of a member's prefix key reaches the head of its prefix.
func check(t *testing.T, r *Ring, a Assignment, members []node.ID, maxLoad int) {
	t.Helper()
	for _, m := range members {
		s, ok := a.Of[m]
		if !ok {
			t.Fatalf("member %d has no superpeer", m)
		}
		if a.Of[s] != s || !slices.Contains(a.Superpeers, s) {
			t.Fatalf("member %d's superpeer %d is not a superpeer", m, s)
		}
	}
	for s, l := range a.Load() {
		if maxLoad > 0 && l > maxLoad {
			t.Fatalf("superpeer %d serves %d members, more than %d", s, l, maxLoad)
		}
	}
}

func TestDHTTenThousandWithChurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const n, want, maxLoad = 10000, 100, 120
	k := PrefixBits(want) // 7: 128 prefixes
	var members []node.ID
	next := node.ID(1)
	for range n {
		members = append(members, next)
		next++
	}
	var counts []float64
	var changed []float64
	var prev Assignment
	maxHops := 0
	for round := 0; round < 10; round++ {
		if round > 0 {
			// Churn: a tenth leave, as many new ones join.
			rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
			members = members[n/10:]
			for range n / 10 {
				members = append(members, next)
				next++
			}
		}
		r, err := NewRing(members, 32)
		if err != nil {
			t.Fatal(err)
		}
		a := DHT(r, k, maxLoad)
		check(t, r, a, members, maxLoad)
		// The lookup of id AND mask from any member reaches the head of
		// the member's prefix, in O(log N) hops.
		mask := uint64(1<<k-1) << (32 - k)
		for range 200 {
			p := members[rng.IntN(len(members))]
			from := members[rng.IntN(len(members))]
			got, hops := r.Lookup(from, r.Of(p)&mask)
			if want := r.Successor(r.Of(p) & mask); got != want {
				t.Fatalf("lookup of %x from %d reached %d, not %d", r.Of(p)&mask, from, got, want)
			}
			maxHops = max(maxHops, hops)
		}
		counts = append(counts, float64(len(a.Superpeers)))
		if prev.Of != nil {
			moved, both := 0, 0
			for _, m := range members {
				if s, ok := prev.Of[m]; ok {
					both++
					if s != a.Of[m] {
						moved++
					}
				}
			}
			changed = append(changed, float64(moved)/float64(both))
		}
		prev = a
	}
	mean := 0.0
	for _, c := range counts {
		mean += c / float64(len(counts))
	}
	exp := ExpectedSuperpeers(n, k)
	if math.Abs(mean-exp) > 0.05*exp || slices.Max(counts) > float64(int(1)<<k)+10 {
		t.Fatalf("superpeers: mean %.1f, max %v; expected about %.1f, at most 2^k = %d (plus a few for the load bound)", mean, slices.Max(counts), exp, 1<<k)
	}
	if maxHops > 2*int(math.Ceil(math.Log2(n))) {
		t.Fatalf("a lookup took %d hops, more than 2 log2 N", maxHops)
	}
	t.Logf("10,000 members, k = %d (%d prefixes), load ≤ %d, 10 rounds of 10%% churn: %.1f superpeers on average (expected %.1f; Tanenbaum's 2^(k−m)·N would be %.4f for m = 32), lookups at most %d hops, %.1f%% of the members that stayed changed superpeer per round",
		k, 1<<k, maxLoad, mean, exp, math.Exp2(float64(k)-32)*n, maxHops, 100*meanOf(changed))
}

// TestDHTLoadBound: a bound below the prefixes' sizes adds superpeers
// inside the prefixes and holds; without it some superpeer serves more.
func TestDHTLoadBound(t *testing.T) {
	var members []node.ID
	for i := 1; i <= 2000; i++ {
		members = append(members, node.ID(i))
	}
	r, _ := NewRing(members, 32)
	free := DHT(r, 4, 0) // 16 prefixes of about 125
	worst := 0
	for _, l := range free.Load() {
		worst = max(worst, l)
	}
	if worst <= 100 {
		t.Fatalf("without a bound the worst superpeer serves %d: the bound below would not be tested", worst)
	}
	bounded := DHT(r, 4, 100)
	check(t, r, bounded, members, 100)
	t.Logf("2,000 members, 16 prefixes: worst load %d without a bound (%d superpeers), ≤ 100 with one (%d superpeers)", worst, len(free.Superpeers), len(bounded.Superpeers))
}

// TestGeometricNearer: with coordinates, the geometric scheme attaches
// members to much nearer superpeers than the DHT scheme, within the load
// bound.
func TestGeometricNearer(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const n = 2000
	_, truth := coords.Synth{N: n, Spread: 150, MaxHeight: 10}.Matrix(rng)
	pos := map[node.ID]coords.Coord{}
	var members []node.ID
	for i, c := range truth {
		pos[node.ID(i+1)] = c
		members = append(members, node.ID(i+1))
	}
	r, _ := NewRing(members, 32)
	dht := DHT(r, PrefixBits(40), 60)
	geo := Geometric(pos, 40, 60)
	check(t, r, geo, members, 60)
	mean := func(a Assignment) float64 {
		s, c := 0.0, 0
		for m, sp := range a.Of {
			if m != sp {
				s += coords.Dist(pos[m], pos[sp])
				c++
			}
		}
		return s / float64(c)
	}
	dm, gm := mean(dht), mean(geo)
	if gm > dm/2 {
		t.Fatalf("geometric: %.1f ms to the superpeer on average, DHT %.1f: not nearer", gm, dm)
	}
	t.Logf("2,000 members in a 150 ms plane: round trip to the superpeer %.1f ms (geometric, %d superpeers) against %.1f ms (DHT, %d)", gm, len(geo.Superpeers), dm, len(dht.Superpeers))
}

func meanOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x / float64(len(xs))
	}
	return s
}
