package group

import "testing"

// TestDeliveredSetAhead: deliveries past a gap are held apart and folded
// into the count once the gap is delivered; the count alone says what
// undelivered and status read (everything up to it delivered).
func TestDeliveredSetAhead(t *testing.T) {
	d := newDeliveredSet(2)
	for _, q := range []uint64{1, 3, 4, 1} {
		d.add(1, q)
	}
	if d.upto[1] != 1 || d.has(1, 2) || !d.has(1, 3) || !d.has(1, 4) || d.has(1, 5) || d.has(0, 1) {
		t.Fatalf("after 1, 3, 4: upto %d, has 2 %v, 3 %v, 4 %v", d.upto[1], d.has(1, 2), d.has(1, 3), d.has(1, 4))
	}
	d.add(1, 2)
	if d.upto[1] != 4 || len(d.ahead[1]) != 0 {
		t.Fatalf("after 2: upto %d, %d held apart; want 4 and none", d.upto[1], len(d.ahead[1]))
	}
}
