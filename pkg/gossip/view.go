package gossip

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Partial views (Config.View > 0).
//
// The seed asks of PrCast a "decentralised and lightweight group
// membership, i.e. a process can join and leave a multicast group in a
// decentralised way and processes do not need to know all members of the
// group" (Gidenstam et al. §2), and names lpbcast and SCAMP (its
// references [7] and [8]) as examples, without fixing how views are kept.
// This file keeps them with Cyclon's shuffle (Voulgaris, Gavidia and van
// Steen, "CYCLON: inexpensive membership management for unstructured P2P
// overlays", J. Network Syst. Manage. 13(2), 2005), chosen over SCAMP's
// subscription forwarding and lpbcast's piggybacked subscriptions because
// it keeps every view at exactly its size, costs one request and one
// answer per member and round whatever n is, and ages out crashed members
// without a failure detector:
//
//   - every member keeps View entries (member, age); each round it ages
//     them all by one and sends the member q of the oldest entry a
//     shuffle: its own entry with age 0 and Shuffle−1 others picked at
//     random; if q has not answered by the next round, q's entry goes;
//   - q answers with Shuffle entries picked at random from its view;
//   - each side keeps what it got (not itself, not what it already has),
//     first in free slots, then in place of the entries it sent.
//
// A member that crashed is taken out when it is the oldest and does not
// answer, and no one hears of it again: it no longer sends its own fresh entry. A joiner
// knows only its contacts at first; its first shuffle puts its entry into
// a contact's view, from where the shuffles spread it.
//
// PrCast's pushes and pulls go to members of the view, and a message from
// any member is accepted, so that a member at n = 10,000 knows and talks
// to O(log n) others per round.

// ViewSize is the default view size for a group of about n members:
// ⌈(c+1)·ln n⌉ with c = 2, the view size that SCAMP's subscriptions
// settle at and at which its notices reach everyone with probability
// about e^(−e^(−c)) (Ganesh et al., the seed's reference [8], §3), and at
// least Fanout+1, so that pushes always have distinct targets.
func ViewSize(n int) int {
	if n < 2 {
		return 1
	}
	ln := math.Log(float64(n))
	return max(int(math.Ceil(3*ln)), int(math.Ceil(ln))+2)
}

// ViewEntry is one entry of a partial view: a member and the rounds since
// that member put it into circulation.
type ViewEntry struct {
	ID  node.ID
	Age uint8
}

// MaxView bounds a view and a shuffle on the wire.
const MaxView = 255

// initView fills the view from contacts, at random, up to View entries.
func (m *Machine) initView(contacts []node.ID) {
	for _, i := range m.cfg.Rand.Perm(len(contacts)) {
		m.addView(ViewEntry{ID: contacts[i]})
	}
}

// addView keeps e in a free slot, unless it is this member or already
// known. It reports whether e was kept.
func (m *Machine) addView(e ViewEntry) bool {
	if e.ID == m.cfg.ID || e.ID == node.None || len(m.view) >= m.cfg.View || m.inView(e.ID) {
		return false
	}
	m.view = append(m.view, e)
	return true
}

func (m *Machine) inView(id node.ID) bool {
	return slices.ContainsFunc(m.view, func(e ViewEntry) bool { return e.ID == id })
}

// View returns the current partial view (nil without Config.View).
func (m *Machine) View() []ViewEntry { return slices.Clone(m.view) }

// sample returns k entries of the view at random, not counting skip.
func (m *Machine) sample(k int, skip node.ID) []ViewEntry {
	var out []ViewEntry
	for _, i := range m.cfg.Rand.Perm(len(m.view)) {
		if len(out) == k {
			break
		}
		if m.view[i].ID != skip {
			out = append(out, m.view[i])
		}
	}
	return out
}

// shuffle starts this round's exchange with the oldest entry. Unlike
// Cyclon, which takes the oldest entry out when it sends, the entry stays
// until the next round and goes only if no answer came by then: a lost
// answer would otherwise shrink the view for good, and under steady loss
// views would run dry.
func (m *Machine) shuffle() {
	if m.cfg.frozenView {
		return
	}
	if m.sentTo != node.None {
		// No answer in a round: the member has crashed, or the exchange
		// was lost; either way it goes (its own shuffles bring it back).
		if i := slices.IndexFunc(m.view, func(e ViewEntry) bool { return e.ID == m.sentTo }); i >= 0 && len(m.view) > 1 {
			m.view = slices.Delete(m.view, i, i+1)
		}
		m.sentTo, m.sent = node.None, nil
	}
	if len(m.view) == 0 {
		return
	}
	oldest := 0
	for i := range m.view {
		m.view[i].Age = min(m.view[i].Age+1, math.MaxUint8-1)
		if m.view[i].Age > m.view[oldest].Age {
			oldest = i
		}
	}
	q := m.view[oldest].ID
	sent := m.sample(m.cfg.Shuffle-1, q)
	if !m.cfg.dropSelf {
		sent = append([]ViewEntry{{ID: m.cfg.ID}}, sent...)
	}
	m.sentTo, m.sent = q, sent
	m.stats["shuffles"]++
	m.send(q, Msg{Type: MsgShuffle, View: sent})
}

// answered: q answered this round's shuffle; it is alive, and its entry
// starts again at age 0.
func (m *Machine) answered(q node.ID) {
	if i := slices.IndexFunc(m.view, func(e ViewEntry) bool { return e.ID == q }); i >= 0 {
		m.view[i].Age = 0
	}
}

// answerShuffle answers a shuffle from p and keeps what it brought.
func (m *Machine) answerShuffle(p node.ID, got []ViewEntry) {
	reply := m.sample(m.cfg.Shuffle, p)
	m.send(p, Msg{Type: MsgShuffleReply, View: reply})
	m.merge(got, reply)
}

// merge keeps the entries got, first in free slots, then in place of the
// entries sent.
func (m *Machine) merge(got, sent []ViewEntry) {
	for _, e := range got {
		if e.ID == m.cfg.ID || m.inView(e.ID) {
			continue
		}
		if m.addView(e) {
			continue
		}
		for len(sent) > 0 {
			i := slices.IndexFunc(m.view, func(v ViewEntry) bool { return v.ID == sent[0].ID })
			sent = sent[1:]
			if i >= 0 {
				m.view[i] = e
				break
			}
		}
	}
}

// newViewed returns a Machine that keeps a partial view.
func newViewed(cfg Config) (*Machine, error) {
	switch {
	case cfg.ID == node.None:
		return nil, errors.New("gossip: id 0 is invalid")
	case cfg.Rand == nil:
		return nil, errors.New("gossip: Config.Rand is required")
	case cfg.Tree:
		return nil, errors.New("gossip: a partial view (Config.View) does not go with Tree")
	case cfg.View > MaxView:
		return nil, fmt.Errorf("gossip: a view of %d entries is more than %d", cfg.View, MaxView)
	}
	if cfg.Shuffle <= 0 {
		cfg.Shuffle = (cfg.View + 1) / 2
	}
	cfg.Shuffle = min(cfg.Shuffle, cfg.View)
	// The group's size is not known to a member with a partial view: the
	// defaults that depend on it follow the size the view was made for
	// (ViewSize(n) ≈ 3·ln n, so n ≈ e^(View/3)).
	n := math.Exp(float64(cfg.View) / 3)
	if cfg.Fanout <= 0 {
		cfg.Fanout = int(math.Ceil(math.Log(n))) + 1
	}
	cfg.Fanout = min(cfg.Fanout, cfg.View)
	if cfg.TTL <= 0 {
		cfg.TTL = int(math.Ceil(math.Log2(n))) + 2
	}
	contacts := cfg.Peers
	cfg.Peers = nil
	m, err := New(Config{ID: cfg.ID, Peers: []node.ID{cfg.ID}, Rand: cfg.Rand, Fanout: cfg.Fanout, Period: cfg.Period,
		TTL: cfg.TTL, Buffer: cfg.Buffer, History: cfg.History})
	if err != nil {
		return nil, err
	}
	cfg.Period, cfg.Buffer, cfg.History, cfg.TTL = m.cfg.Period, m.cfg.Buffer, m.cfg.History, m.cfg.TTL
	cfg.Branch, cfg.PullEvery = m.cfg.Branch, m.cfg.PullEvery
	m.cfg = cfg
	m.initView(contacts)
	return m, nil
}

// Fanout is the number of peers each push goes to.
func (m *Machine) Fanout() int { return m.cfg.Fanout }

// TTL is the number of rounds an event is pushed on.
func (m *Machine) TTL() int { return m.cfg.TTL }
