package consensus

import (
	"crypto/ed25519"
	"encoding/binary"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/rounds"
)

// Signed messages (Algo Signed).
//
// Schaffernicht's Topic V ("EIG limits", "Practical consideration"): when messages carry
// integrity — digital signatures, so that a relay cannot alter what it
// passes on — agreement needs only n > 2f. The algorithm here is Lamport,
// Shostak and Pease's SM(f) ("The Byzantine Generals Problem", 1982, §4),
// run with every process as a commander at once (interactive consistency,
// as EIG here runs every process's tree at once), with Dolev and Strong's
// relay rule: a value counts only with a chain of distinct signatures that
// starts with its origin's and is exactly as long as the round.
//
//   - Round 1: each process signs its input and sends it to everyone.
//   - Round r: a process accepts a value from origin j when the chain has r
//     signatures by distinct processes, the first is j's, the last is the
//     sender's, its own is not among them, and every signature verifies. A
//     value new to V_j (the values known for j; at most two are kept: two
//     already prove j faulty) is relayed in round r+1, with the receiver's
//     signature appended, to every process not in the chain.
//   - After round f+1: choice(V_j) is V_j's one value, or the default when
//     V_j holds none or two; the decision is the strict majority of the
//     vector (choice(V_1), …, choice(V_n)), else the default.
//
// Why SM(f) and not EIG with signatures: EIG's tree is O(n^f) values;
// with signatures a relay can only repeat or drop, never change, a value,
// so it is enough to flood each origin's values once, and a process sends
// at most two entries per origin in a round. Agreement: a value an honest
// process accepts in round r ≤ f reaches every honest process by round
// r+1 (it relays it); one accepted in round f+1 has f+1 distinct signers,
// one of them honest, which relayed it to everyone earlier. So every
// honest process ends with the same V_j for every j, the same vector, and
// the same decision. Validity: an honest origin signs one value, and
// nobody can forge its signature, so V_j is that value everywhere; with
// n > 2f the honest inputs are a strict majority of the vector.
//
// What is signed binds the value to its origin, the run (Config.Session)
// and the chain so far: Ed25519 over "roundtable consensus signed v1",
// the session, the origin, the value and the signers up to and including
// the one signing. Altering the value, dropping, reordering or inserting
// a signature, or replaying an entry in another round (its chain length
// no longer matches) or another run each makes some signature fail or a
// rule above reject it.

// Sig is one signature of a chain.
type Sig struct {
	ID  node.ID
	Sig []byte // ed25519.SignatureSize bytes
}

// SignedEntry is a value with its chain of signatures; the first signer
// is its origin.
type SignedEntry struct {
	Value string
	Chain []Sig
}

const signDomain = "roundtable consensus signed v1"

// signedBytes is what the k-th signer of a chain signs.
func signedBytes(session, value string, signers []node.ID) []byte {
	b := make([]byte, 0, len(signDomain)+len(session)+len(value)+8*len(signers)+16)
	b = append(b, signDomain...)
	b = binary.AppendUvarint(b, uint64(len(session)))
	b = append(b, session...)
	b = binary.AppendUvarint(b, uint64(len(value)))
	b = append(b, value...)
	for _, id := range signers {
		b = binary.AppendUvarint(b, uint64(id))
	}
	return b
}

func chainIDs(c []Sig) []node.ID {
	ids := make([]node.ID, len(c))
	for i, s := range c {
		ids[i] = s.ID
	}
	return ids
}

// sign appends this process's signature to e's chain (a new entry).
func (m *Machine) sign(e SignedEntry) SignedEntry {
	ids := append(chainIDs(e.Chain), m.cfg.ID)
	sig := ed25519.Sign(m.cfg.Key, signedBytes(m.cfg.Session, e.Value, ids))
	return SignedEntry{Value: e.Value, Chain: append(slices.Clone(e.Chain), Sig{ID: m.cfg.ID, Sig: sig})}
}

// verify applies the acceptance rules above to an entry received from
// `from` in round r.
func (m *Machine) verify(from node.ID, r int, e SignedEntry) bool {
	if len(e.Chain) != r || e.Chain[len(e.Chain)-1].ID != from {
		return false
	}
	ids := chainIDs(e.Chain)
	valid := m.validLabel(ids)
	if m.cfg.bug == bugRepeatSigner {
		// planted: signers only checked to be members, repeats let through
		valid = !slices.ContainsFunc(ids, func(id node.ID) bool { return !slices.Contains(m.cfg.Peers, id) })
	}
	if !valid || slices.Contains(ids, m.cfg.ID) {
		return false
	}
	for k, s := range e.Chain {
		pub, ok := m.cfg.Keys[s.ID]
		if !ok || len(s.Sig) != ed25519.SignatureSize {
			return false
		}
		if m.cfg.bug == bugOneBadSignature && k == 0 && len(e.Chain) > 1 {
			continue // planted: a relayed value's origin signature is not checked
		}
		if !ed25519.Verify(pub, signedBytes(m.cfg.Session, e.Value, ids[:k+1]), s.Sig) {
			return false
		}
	}
	return true
}

// signedReceive applies a round's message (Algo Signed).
func (m *Machine) signedReceive(in node.Envelope[Msg]) {
	r := int(in.Msg.Round)
	for _, e := range in.Msg.Signed {
		if !m.verify(in.From, r, e) {
			m.forged++
			continue
		}
		origin := e.Chain[0].ID
		vs := m.vals[origin]
		if slices.Contains(vs, e.Value) || len(vs) >= 2 {
			continue
		}
		m.vals[origin] = append(vs, e.Value)
		if r < m.last {
			m.relay = append(m.relay, e)
		}
	}
}

// signedStart: round 1's own signed value.
func (m *Machine) signedStart() {
	m.vals = map[node.ID][]string{m.cfg.ID: {m.cfg.Value}}
	m.relay = []SignedEntry{{Value: m.cfg.Value}}
}

// signedEntries is what an honest process sends in round r to p: every
// value accepted last round (its own in round 1), signed by it, unless p
// signed it already.
func (m *Machine) signedEntries(p node.ID) []SignedEntry {
	var out []SignedEntry
	for _, e := range m.outbox {
		if !slices.Contains(chainIDs(e.Chain), p) {
			out = append(out, e)
		}
	}
	return out
}

// signRound signs what is to be relayed this round, once for every peer.
func (m *Machine) signRound() {
	m.prevOut, m.outbox = m.outbox, nil
	for _, e := range m.relay {
		m.outbox = append(m.outbox, m.sign(e))
	}
	m.relay = nil
}

// signedVector is (choice(V_j)) over the peers in ID order.
func (m *Machine) signedVector() []string {
	var vec []string
	for _, p := range m.cfg.sortedPeers() {
		if vs := m.vals[p]; len(vs) == 1 {
			vec = append(vec, vs[0])
		} else {
			vec = append(vec, m.cfg.Default)
		}
	}
	return vec
}

func (m *Machine) signedDecision() (string, []string) {
	vec := m.signedVector()
	return rounds.Majority(vec, m.cfg.Default), vec
}

// signedMessage is round r's entries for p, the i-th other process, as
// this process's strategy has it.
func (m *Machine) signedMessage(r int, p node.ID, i int) []SignedEntry {
	honest := m.signedEntries(p)
	half := i >= (len(m.others)+1)/2
	switch m.cfg.Byzantine {
	case Silent:
		return nil
	case Random:
		// Equivocation is within the model: its own signature is its own.
		if r == 1 {
			choices := []string{m.cfg.Value, m.cfg.Lie, m.cfg.Default}
			return []SignedEntry{m.sign(SignedEntry{Value: choices[m.cfg.Rand.IntN(len(choices))]})}
		}
		var out []SignedEntry
		for _, e := range honest {
			if m.cfg.Rand.IntN(2) == 0 {
				out = append(out, e)
			}
		}
		return out
	case TwoFaced:
		// Its own value to the first half, the lie to the second; later it
		// relays only to the first half (the second hears of the
		// equivocation from others, as late as they can make it).
		if r == 1 {
			v := m.cfg.Value
			if half {
				v = m.cfg.Lie
			}
			return []SignedEntry{m.sign(SignedEntry{Value: v})}
		}
		if half {
			return nil
		}
		return honest
	case Liar:
		if r == 1 {
			return honest
		}
		var out []SignedEntry
		for _, e := range honest {
			e.Value = m.cfg.Lie
			out = append(out, e)
		}
		return out
	case Forger:
		return append(honest, m.forge(r, p)...)
	}
	return honest
}

// forge makes the forgery of the round for recipient p (Strategy Forger).
func (m *Machine) forge(r int, p node.ID) []SignedEntry {
	var victim node.ID // an honest-looking origin other than p and us
	for _, o := range m.others {
		if o != p {
			victim = o
			break
		}
	}
	var seen []SignedEntry // entries of others this process accepted
	for _, e := range m.outbox {
		if e.Chain[0].ID != m.cfg.ID {
			seen = append(seen, e)
		}
	}
	switch m.cfg.Rand.IntN(7) {
	case 0: // an accepted value, altered under its signatures
		for _, e := range seen {
			e.Value = m.cfg.Lie
			return []SignedEntry{e}
		}
	case 1: // the origin's signature dropped
		for _, e := range seen {
			if len(e.Chain) > 1 {
				return []SignedEntry{{Value: e.Value, Chain: slices.Clone(e.Chain[1:])}}
			}
		}
	case 2: // two signatures swapped
		for _, e := range seen {
			if len(e.Chain) > 1 {
				c := slices.Clone(e.Chain)
				c[0], c[1] = c[1], c[0]
				return []SignedEntry{{Value: e.Value, Chain: c}}
			}
		}
	case 3: // what it sent last round, replayed
		if len(m.prevOut) > 0 {
			return []SignedEntry{m.prevOut[m.cfg.Rand.IntN(len(m.prevOut))]}
		}
	case 4: // another process's origin slot, signed with this process's key
		if victim != node.None && r == 2 {
			sig := ed25519.Sign(m.cfg.Key, signedBytes(m.cfg.Session, m.cfg.Lie, []node.ID{victim}))
			return []SignedEntry{m.sign(SignedEntry{Value: m.cfg.Lie, Chain: []Sig{{ID: victim, Sig: sig}}})}
		}
	case 5: // a value of its own with a chain too short for the round
		if r > 1 {
			return []SignedEntry{m.sign(SignedEntry{Value: m.cfg.Lie})}
		}
	case 6: // a chain of the round's length with one signer, itself, r times:
		// every signature is good, but r rounds need r distinct signers
		// (Lamport, Shostak and Pease's signed messages; Schaffernicht,
		// Topic V), so that one of them is loyal and relays it to all.
		// Sent to half of the others only, in the round where nobody
		// relays what it accepts.
		if r > 1 && int(p)%2 == 0 {
			e := SignedEntry{Value: m.cfg.Lie}
			for range r {
				e = m.sign(e)
			}
			return []SignedEntry{e}
		}
	}
	return nil
}
