package mcast

import "time"

// seqStore is one sender's messages held here, by sequence number: slot
// i holds seq base+i. Everything below base is gone (collected; it is at
// or below recv, so it is never stored again), so the slots run from the
// oldest message held to the highest received, and a lookup is an index,
// not a hash: retransmit looks up every position between a peer's digest
// and the highest held on every digest, deliver and collect one per
// message (in a 3-member flood of the pipes bench, map lookups by
// sequence number were a tenth of the host's samples).
type seqStore struct {
	base  uint64
	slots []seqSlot
}

type seqSlot struct {
	it   Item
	sent time.Time // when this member last sent it (zero: never)
	held bool
}

func newSeqStore() seqStore { return seqStore{base: 1} }

// at is seq's slot, nil when seq is not held.
func (st *seqStore) at(seq uint64) *seqSlot {
	if seq < st.base || seq-st.base >= uint64(len(st.slots)) {
		return nil
	}
	if s := &st.slots[seq-st.base]; s.held {
		return s
	}
	return nil
}

// get is seq's message.
func (st *seqStore) get(seq uint64) (Item, bool) {
	if s := st.at(seq); s != nil {
		return s.it, true
	}
	return Item{}, false
}

// put holds it and says whether it did: a seq below base was collected
// and is not held again (collect stays at or below recv, so only a
// planted bug gets there). The caller bounds how far ahead (aheadMax).
func (st *seqStore) put(it Item) bool {
	if it.Seq < st.base {
		return false
	}
	i := it.Seq - st.base
	if n := uint64(len(st.slots)); i >= n {
		st.slots = append(st.slots, make([]seqSlot, i+1-n)...)
	}
	st.slots[i] = seqSlot{it: it, held: true}
	return true
}

// drop forgets every seq up to upto and says how many were held.
func (st *seqStore) drop(upto uint64) int {
	if upto < st.base {
		return 0
	}
	k := min(upto-st.base+1, uint64(len(st.slots)))
	n := 0
	for i := range st.slots[:k] {
		if st.slots[i].held {
			n++
		}
	}
	clear(st.slots[:k]) // the payloads go with them
	st.slots = st.slots[k:]
	st.base = upto + 1
	return n
}
