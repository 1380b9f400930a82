package superpeer

import (
	"math/rand/v2"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/coords"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestRingKeysAtMembers: Chord's successor(k) is the first member whose
// identifier is equal to or follows k (Stoica et al.), so the key that is
// a member's own identifier belongs to that member, and a finger-table
// lookup for it from every member ends there; every other key ends at
// the successor. On a 10-bit ring, where identifiers are dense.
func TestRingKeysAtMembers(t *testing.T) {
	var members []node.ID
	for i := 1; i <= 60; i++ {
		members = append(members, node.ID(i))
	}
	r, err := NewRing(members, 10)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for _, target := range members {
		if got := r.Successor(r.Of(target)); got != target {
			t.Fatalf("Successor(%d), the identifier of member %d, is member %d", r.Of(target), target, got)
		}
		for _, from := range members {
			if got, _ := r.Lookup(from, r.Of(target)); got != target {
				t.Fatalf("lookup from %d for %d, the identifier of member %d, ends at %d", from, r.Of(target), target, got)
			}
		}
		key := rng.Uint64N(1 << 10)
		if got, _ := r.Lookup(target, key); got != r.Successor(key) {
			t.Fatalf("lookup from %d for key %d ends at %d, its successor is %d", target, key, got, r.Successor(key))
		}
	}
}

// TestGeometricRoomAtTheBound: when the members do not divide evenly
// among superpeers of maxLoad each, the geometric scheme still finds room
// for everyone: every member is assigned and none over the bound, for
// every group of 1 to 40 members and bounds 1 to 5, asking for one
// superpeer.
func TestGeometricRoomAtTheBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for n := 1; n <= 40; n++ {
		_, truth := coords.Synth{N: n, Spread: 150}.Matrix(rng)
		pos := map[node.ID]coords.Coord{}
		for i, c := range truth {
			pos[node.ID(i+1)] = c
		}
		for maxLoad := 1; maxLoad <= 5; maxLoad++ {
			a := Geometric(pos, 1, maxLoad)
			if len(a.Of) != n {
				t.Fatalf("%d members, load bound %d: %d assigned", n, maxLoad, len(a.Of))
			}
			for sp, l := range a.Load() {
				if l > maxLoad {
					t.Fatalf("%d members, load bound %d: superpeer %d serves %d", n, maxLoad, sp, l)
				}
			}
		}
	}
}
