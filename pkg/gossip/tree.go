package gossip

import (
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Tree mode (Config.Tree): the members, sorted by ID, form a tree of
// branching factor Branch rooted at the lowest ID; the member at index i
// has parent (i−1)/Branch and children Branch·i+1 … Branch·i+Branch. A
// new event (broadcast here, or pushed by a tree neighbour) is forwarded
// once to every tree neighbour but the one it came from, batched per
// Period: one push per neighbour per round at most, whatever the rate. So
// an event costs n−1 transmissions, and reaches everyone within the
// tree's diameter in hops, each a link delay plus up to one Period.
// Each push carries the sender's digest, and its receiver sends back what
// the sender lacks of the events it has held for repairAge rounds (younger
// ones may still be on their way along the tree), and pulls from the
// sender when the digest shows it has events the receiver lacks: an edge that lost
// events while cut is repaired by its first push after it heals, at no
// cost while nothing is lost. Where no traffic flows, the pull (every
// PullEvery rounds, to a tree neighbour and to a random member in turn)
// repairs; a repaired event is forwarded
// down the tree like a pushed one, since the push it overtook will be
// dropped here as a duplicate. This is the structure the Gossip Glomers efficiency
// challenges reward; random mode stays the default for groups that
// change or do not all know each other.

// repairAge is how many Periods an event must have been held before a
// neighbour's digest makes it send the event back as a repair.
const repairAge = 5

// treeItem is an event to forward, and the neighbour it came from.
type treeItem struct {
	ev   Event
	from node.ID
}

// takeTree delivers ev if new and queues it for the tree neighbours.
func (m *Machine) takeTree(ev Event, from node.ID) {
	if m.has(ev.Origin, ev.Seq) && !m.cfg.noDedup {
		m.stats["duplicates"]++
		return
	}
	m.take(ev, 0) // deliver and keep for repair; no random push
	m.fwd = append(m.fwd, treeItem{ev: Event{Origin: ev.Origin, Seq: ev.Seq, Payload: ev.Payload}, from: from})
	if len(m.fwd) > 2*m.cfg.Buffer {
		// Oldest first: they are the likeliest to have arrived elsewhere
		// by another path, and the pull repairs what is lost.
		drop := len(m.fwd) - m.cfg.Buffer
		m.stats["dropped"] += uint64(drop)
		m.fwd = slices.Delete(m.fwd, 0, drop)
	}
}

// neighbours are this member's tree neighbours in the current group.
func (m *Machine) neighbours() []node.ID {
	all := append([]node.ID{m.cfg.ID}, m.peers...)
	slices.Sort(all)
	i := slices.Index(all, m.cfg.ID)
	b := m.cfg.Branch
	var out []node.ID
	if i > 0 {
		out = append(out, all[(i-1)/b])
	}
	for c := b*i + 1; c <= b*i+b && c < len(all); c++ {
		out = append(out, all[c])
	}
	return out
}

// forward sends each tree neighbour one push with the queued events it
// did not send us, within a frame's budget (the rest waits a round).
func (m *Machine) forward() {
	if len(m.fwd) == 0 {
		return
	}
	nbrs := m.neighbours()
	var dig []Have
	if !m.cfg.noPull {
		dig = m.digest()
	}
	if len(dig) > 1024 {
		dig = nil // too big to ride along: the pulls carry it
	}
	// The digest takes its share of the frame (at most 20 bytes an entry).
	size, n := 20*len(dig), 0
	for _, it := range m.fwd {
		if n > 0 && size+len(it.ev.Payload) > pushBudget || n == maxEvents {
			break
		}
		size += len(it.ev.Payload) + 20
		n++
	}
	batch := m.fwd[:n]
	for _, to := range nbrs {
		var evs []Event
		for _, it := range batch {
			if it.from != to {
				evs = append(evs, it.ev)
			}
		}
		if len(evs) > 0 {
			m.stats["pushed"]++
			m.send(to, Msg{Type: MsgPush, Events: evs, Digest: dig})
		}
	}
	m.fwd = slices.Delete(m.fwd, 0, n)
}

// pullTree alternates the pull between a random tree neighbour (the edge
// that lost something after a cut heals is most likely one of ours, and
// the sender does not send again) and a random member.
func (m *Machine) pullTree() {
	if nb := m.neighbours(); (m.ticks/m.cfg.PullEvery)%2 == 1 && len(nb) > 0 {
		m.pull(nb[m.cfg.Rand.IntN(len(nb))])
		return
	}
	m.pull(m.pick(1)[0])
}

// askIfBehind: a neighbour's digest shows events we lack that it has not
// sent us (it sent them while the edge was cut): pull from it, at most
// once per repairAge rounds.
func (m *Machine) askIfBehind(now time.Time, from node.ID, digest []Have) {
	if now.Before(m.asked[from].Add(repairAge * m.cfg.Period)) {
		return
	}
	for _, h := range digest {
		if h.Next > m.nextOf(h.Origin) {
			m.asked[from] = now
			m.pull(from)
			return
		}
	}
}
