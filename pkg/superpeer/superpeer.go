// Package superpeer selects superpeers in a large group (Tanenbaum ch. 6,
// "Elections in large-scale systems", after Lo et al. 2005): a fraction of
// the members that the others attach to, evenly spread, each serving at
// most a fixed number of ordinary members. Pure code, no I/O.
//
// # The DHT scheme
//
// Members sit on a Chord ring of m-bit identifiers (Ring: the identifier
// of a member is a hash of its ID, so identifiers are uniform). To get S
// superpeers, reserve the leftmost k = ⌈log₂ S⌉ bits: a member with
// identifier id is a superpeer when the lookup of id AND 1…10…0 (k ones)
// routes to itself, and an ordinary member p attaches to the member the
// lookup of p AND 1…10…0 routes to. That member is the first one of p's
// k-bit prefix (p's own prefix is not empty: p is in it), so the
// superpeers are the first member of each non-empty prefix: at most 2^k,
// on average 2^k·(1 − (1 − 2^−k)^N) for N members. Tanenbaum ch. 6 states the
// average as 2^(k−m)·N, which is the same count for a fully populated
// identifier space (N = 2^m, every prefix non-empty); for N ≪ 2^m the
// count is bounded by 2^k, not by 2^(k−m)·N. Lookups are routed with
// Chord's finger tables (Ring.Lookup counts the hops: O(log N)).
//
// The load bound is the seed's fourth requirement and the scheme alone
// does not give it: a prefix holds Binomial(N, 2^−k) members. With a
// bound L (MaxLoad), a prefix with more than L+1 members takes more
// superpeers from its own members: every (L+1)-th member in ring order is
// one, and serves the L that follow it. The extra superpeers stay inside
// the prefix, so they are as evenly spread as the prefixes are.
//
// # The geometric scheme
//
// With network coordinates (pkg/coords), Geometric picks S superpeers
// spread over the space (greedy farthest point on predicted round trips)
// and attaches every ordinary member to the nearest superpeer that has
// room (pairs taken nearest first), so that ordinary members reach their
// superpeer fast: what the DHT scheme, blind to latency, cannot promise.
package superpeer

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/roundtable-go/roundtable/pkg/coords"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Ring is a Chord ring of m-bit identifiers.
type Ring struct {
	M     uint
	ids   []uint64           // sorted identifiers
	owner map[uint64]node.ID // identifier → member
	of    map[node.ID]uint64
}

// Ident is member id's m-bit identifier (the top m bits of SHA-256 of
// its decimal ID).
func Ident(id node.ID, m uint) uint64 {
	h := sha256.Sum256([]byte(fmt.Sprint(uint32(id))))
	return binary.BigEndian.Uint64(h[:8]) >> (64 - m)
}

// NewRing places members on a ring of m-bit identifiers (8 ≤ m ≤ 63).
// Two members whose identifiers collide: the one with the lower ID keeps
// it, the other takes the next free one.
func NewRing(members []node.ID, m uint) (*Ring, error) {
	if m < 8 || m > 63 {
		return nil, fmt.Errorf("superpeer: identifiers of %d bits (want 8 to 63)", m)
	}
	if len(members) > 1<<(m-1) {
		return nil, fmt.Errorf("superpeer: %d members do not fit %d-bit identifiers", len(members), m)
	}
	r := &Ring{M: m, owner: map[uint64]node.ID{}, of: map[node.ID]uint64{}}
	sorted := slices.Clone(members)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	for _, id := range sorted {
		x := Ident(id, m)
		for {
			if _, taken := r.owner[x]; !taken {
				break
			}
			x = (x + 1) & (1<<m - 1)
		}
		r.owner[x], r.of[id] = id, x
		r.ids = append(r.ids, x)
	}
	slices.Sort(r.ids)
	return r, nil
}

// Len is the number of members.
func (r *Ring) Len() int { return len(r.ids) }

// Of is member id's identifier.
func (r *Ring) Of(id node.ID) uint64 { return r.of[id] }

// Successor is the member responsible for key: the first identifier at
// or after it, clockwise.
func (r *Ring) Successor(key uint64) node.ID {
	i := sort.Search(len(r.ids), func(i int) bool { return r.ids[i] >= key })
	if i == len(r.ids) {
		i = 0
	}
	return r.owner[r.ids[i]]
}

// between: x in (a, b] on the ring.
func between(x, a, b uint64) bool {
	if a < b {
		return a < x && x <= b
	}
	return x > a || x <= b
}

// Lookup routes a lookup of key from member from with Chord's finger
// tables (finger i of n: the successor of n + 2^i) and returns the
// responsible member and the hops taken.
func (r *Ring) Lookup(from node.ID, key uint64) (node.ID, int) {
	n := r.of[from]
	hops := 0
	for {
		succ := r.of[r.Successor((n+1)&(1<<r.M-1))]
		if n == key || between(key, n, succ) {
			if n == key {
				return r.owner[n], hops
			}
			return r.owner[succ], hops + 1
		}
		// The closest preceding finger of key.
		next := n
		for i := int(r.M) - 1; i >= 0; i-- {
			f := r.of[r.Successor((n+1<<uint(i))&(1<<r.M-1))]
			if f != n && between(f, n, key) && f != key {
				next = f
				break
			}
		}
		if next == n {
			return r.owner[succ], hops + 1
		}
		n = next
		hops++
		if hops > 2*int(r.M) {
			return r.Successor(key), hops // cannot happen on a consistent ring
		}
	}
}

// Assignment is a selection: each member's superpeer (a superpeer's is
// itself).
type Assignment struct {
	Superpeers []node.ID
	Of         map[node.ID]node.ID
}

// Load is how many ordinary members each superpeer serves.
func (a Assignment) Load() map[node.ID]int {
	l := map[node.ID]int{}
	for _, s := range a.Superpeers {
		l[s] = 0
	}
	for m, s := range a.Of {
		if m != s {
			l[s]++
		}
	}
	return l
}

// PrefixBits is k = ⌈log₂ S⌉ for S superpeers.
func PrefixBits(s int) uint {
	if s <= 1 {
		return 0
	}
	return uint(bits.Len(uint(s - 1)))
}

// DHT selects superpeers by the DHT scheme with k prefix bits; maxLoad >
// 0 bounds the ordinary members per superpeer (the package doc).
func DHT(r *Ring, k uint, maxLoad int) Assignment {
	a := Assignment{Of: map[node.ID]node.ID{}}
	mask := uint64(0)
	if k > 0 {
		mask = (1<<k - 1) << (r.M - k)
	}
	// The members of each prefix, in ring order (ids are sorted).
	var prefix []node.ID
	flush := func() {
		for i, m := range prefix {
			lead := prefix[0]
			if maxLoad > 0 {
				lead = prefix[i/(maxLoad+1)*(maxLoad+1)]
			}
			a.Of[m] = lead
			if m == lead {
				a.Superpeers = append(a.Superpeers, m)
			}
		}
		prefix = prefix[:0]
	}
	var cur uint64
	for i, x := range r.ids {
		if i > 0 && x&mask != cur {
			flush()
		}
		cur = x & mask
		prefix = append(prefix, r.owner[x])
	}
	flush()
	slices.Sort(a.Superpeers)
	return a
}

// ExpectedSuperpeers is the average count of the DHT scheme without a
// load bound: 2^k·(1 − (1 − 2^−k)^n).
func ExpectedSuperpeers(n int, k uint) float64 {
	b := math.Exp2(float64(k))
	return b * (1 - math.Pow(1-1/b, float64(n)))
}

// Geometric selects s superpeers spread over the coordinates and
// attaches each ordinary member to the nearest one with room (maxLoad >
// 0; 0: no bound). Members without coordinates are left out.
func Geometric(pos map[node.ID]coords.Coord, s, maxLoad int) Assignment {
	ids := make([]node.ID, 0, len(pos))
	for id := range pos {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	a := Assignment{Of: map[node.ID]node.ID{}}
	if len(ids) == 0 || s <= 0 {
		return a
	}
	if maxLoad > 0 {
		s = max(s, (len(ids)+maxLoad)/(maxLoad+1)) // enough room for everyone
	}
	s = min(s, len(ids))
	// Farthest point, from the member nearest the centroid.
	dims := len(pos[ids[0]].Vec)
	c := coords.Coord{Vec: make([]float64, dims)}
	for _, id := range ids {
		for i, x := range pos[id].Vec {
			c.Vec[i] += x / float64(len(ids))
		}
	}
	first := slices.MinFunc(ids, func(x, y node.ID) int {
		return cmpF(norm(pos[x].Vec, c.Vec), norm(pos[y].Vec, c.Vec))
	})
	sps := []node.ID{first}
	near := map[node.ID]float64{}
	for _, id := range ids {
		near[id] = coords.Dist(pos[id], pos[first])
	}
	for len(sps) < s {
		best := node.None
		for _, id := range ids {
			if !slices.Contains(sps, id) && (best == node.None || near[id] > near[best]) {
				best = id
			}
		}
		sps = append(sps, best)
		for _, id := range ids {
			near[id] = min(near[id], coords.Dist(pos[id], pos[best]))
		}
	}
	slices.Sort(sps)
	a.Superpeers = sps
	load := map[node.ID]int{}
	type pair struct {
		m, s node.ID
		d    float64
	}
	var pairs []pair
	for _, id := range ids {
		if slices.Contains(sps, id) {
			a.Of[id] = id
			continue
		}
		for _, sp := range sps {
			pairs = append(pairs, pair{id, sp, coords.Dist(pos[id], pos[sp])})
		}
	}
	slices.SortFunc(pairs, func(x, y pair) int {
		if c := cmpF(x.d, y.d); c != 0 {
			return c
		}
		if x.m != y.m {
			return int(x.m) - int(y.m)
		}
		return int(x.s) - int(y.s)
	})
	for _, p := range pairs {
		if _, done := a.Of[p.m]; done || maxLoad > 0 && load[p.s] >= maxLoad {
			continue
		}
		a.Of[p.m] = p.s
		load[p.s]++
	}
	return a
}

func norm(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
