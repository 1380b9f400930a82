package mcast

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Record is one line of a member's log: one of its own sends (Send), or a
// delivery of another member's message.
type Record struct {
	Send    bool
	Sender  node.ID // deliveries
	Seq     uint64
	Payload []byte
}

type msgID struct {
	sender node.ID
	seq    uint64
}

// Check judges a run from every member's log (its sends and deliveries in
// the order they happened there). It checks, for every member, integrity
// (each message delivered at most once, only as its sender sent it) and,
// with FIFO and causal order, the order; and agreement among the members
// not in crashed (what one delivered, all delivered; a member's own sends
// count as its deliveries, which is validity). Happens-before is rebuilt
// from the logs, not taken from the messages' timestamps: m → m' when the
// sender of m' had sent or delivered m before sending m'. The error names
// the first counterexample.
func Check(order Order, logs map[node.ID][]Record, crashed map[node.ID]bool) error {
	members := slices.Sorted(func(yield func(node.ID) bool) {
		for id := range logs {
			if !yield(id) {
				return
			}
		}
	})
	pos := map[node.ID]int{}
	for i, id := range members {
		pos[id] = i
	}
	sent := map[msgID][]byte{}
	deps := map[msgID][]uint64{} // causal past of each message, per member
	for _, id := range members {
		count := make([]uint64, len(members))
		var seq uint64
		for _, r := range logs[id] {
			if r.Send {
				seq++
				if r.Seq != seq {
					return fmt.Errorf("member %d's sends are numbered %d after %d", id, r.Seq, seq-1)
				}
				count[pos[id]] = seq
				sent[msgID{id, seq}] = r.Payload
				deps[msgID{id, seq}] = slices.Clone(count)
				continue
			}
			if _, ok := pos[r.Sender]; ok {
				count[pos[r.Sender]]++
			}
		}
	}
	has := map[node.ID]map[msgID]bool{}
	for _, id := range members {
		got := map[msgID]bool{}
		count := make([]uint64, len(members))
		for i, r := range logs[id] {
			if r.Send {
				got[msgID{id, r.Seq}] = true
				count[pos[id]] = r.Seq
				continue
			}
			k := msgID{r.Sender, r.Seq}
			p, ok := sent[k]
			switch {
			case !ok:
				return fmt.Errorf("integrity: member %d delivered %d/%d (line %d), which %d never sent", id, r.Sender, r.Seq, i+1, r.Sender)
			case !bytes.Equal(p, r.Payload):
				return fmt.Errorf("integrity: member %d delivered %d/%d (line %d) with a payload %d did not send", id, r.Sender, r.Seq, i+1, r.Sender)
			case got[k]:
				return fmt.Errorf("integrity: member %d delivered %d/%d twice (line %d)", id, r.Sender, r.Seq, i+1)
			case r.Sender == id:
				return fmt.Errorf("integrity: member %d delivered its own %d as another's (line %d)", id, r.Seq, i+1)
			}
			s := pos[r.Sender]
			if order >= FIFO && r.Seq != count[s]+1 {
				return fmt.Errorf("fifo: member %d delivered %d/%d (line %d) after %d/%d", id, r.Sender, r.Seq, i+1, r.Sender, count[s])
			}
			if order == Causal {
				for j, need := range deps[k] {
					if j != s && count[j] < need {
						return fmt.Errorf("causal: member %d delivered %d/%d (line %d) before %d/%d, which %d had delivered or sent before sending it",
							id, r.Sender, r.Seq, i+1, members[j], need, r.Sender)
					}
				}
			}
			count[s] = max(count[s], r.Seq)
			got[k] = true
		}
		has[id] = got
	}
	for _, a := range members {
		if crashed[a] {
			continue
		}
		for k := range has[a] {
			for _, b := range members {
				if !crashed[b] && !has[b][k] {
					return fmt.Errorf("agreement: member %d delivered %d/%d, member %d did not", a, k.sender, k.seq, b)
				}
			}
		}
	}
	return nil
}
