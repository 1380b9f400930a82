package gossip

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Checker checks deliveries against broadcasts, from the simulator or from
// real processes' logs:
//
//   - integrity: a process delivers an event at most once, and only an
//     event its origin broadcast, with the payload it broadcast;
//   - agreement and validity (Missing, once the run has settled): every
//     process that should have delivered an event did.
type Checker struct {
	sent       map[key][]byte
	delivered  map[node.ID]map[key]bool
	Deliveries int
}

// NewChecker returns an empty Checker.
func NewChecker() *Checker {
	return &Checker{sent: map[key][]byte{}, delivered: map[node.ID]map[key]bool{}}
}

// Broadcast records that origin broadcast payload as its seq-th event.
func (c *Checker) Broadcast(origin node.ID, seq uint64, payload []byte) {
	c.sent[key{origin, seq}] = slices.Clone(payload)
}

// Observe checks one delivery by id.
func (c *Checker) Observe(id node.ID, ev DeliverEvent) error {
	c.Deliveries++
	k := key{ev.Origin, ev.Seq}
	p, ok := c.sent[k]
	if !ok {
		return fmt.Errorf("integrity: %d delivered %d/%d, which was never broadcast", id, ev.Origin, ev.Seq)
	}
	if !bytes.Equal(p, ev.Payload) {
		return fmt.Errorf("integrity: %d delivered %d/%d with a payload that was not broadcast", id, ev.Origin, ev.Seq)
	}
	d := c.delivered[id]
	if d == nil {
		d = map[key]bool{}
		c.delivered[id] = d
	}
	if d[k] {
		return fmt.Errorf("integrity: %d delivered %d/%d twice", id, ev.Origin, ev.Seq)
	}
	d[k] = true
	return nil
}

// Missing lists, for each process in correct (the processes that did not
// crash), the events it has not delivered among those it must: every event
// a correct process broadcast (validity) or another correct process
// delivered (agreement).
func (c *Checker) Missing(correct []node.ID) []string {
	must := map[key]bool{}
	for k := range c.sent {
		if slices.Contains(correct, k.origin) {
			must[k] = true
		}
	}
	for _, id := range correct {
		for k := range c.delivered[id] {
			must[k] = true
		}
	}
	var out []string
	for _, id := range correct {
		n := 0
		for k := range must {
			if !c.delivered[id][k] {
				n++
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d lacks %d of %d events", id, n, len(must)))
		}
	}
	slices.Sort(out)
	return out
}
