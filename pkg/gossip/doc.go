// Package gossip is a lightweight probabilistic broadcast (the seeds'
// PrCast, Gidenstam et al. §2: "delivered to all destinations with high
// probability"), as a pure state machine: ticketd tells ordinary members who
// took and released which ticket through it, and mcast's gossip mode
// disseminates lines with it.
//
// # The protocol
//
// Push (Eugster et al., "Lightweight probabilistic broadcast", Gidenstam et al.'s
// reference [7]): every Period each process sends the events it is
// spreading to Fanout random members (default ⌈ln n⌉ + 1); an event is
// spread for TTL rounds after a process first gets it (default
// ⌈log₂ n⌉ + 2), and a process delivers each event once. Push alone leaves a
// few processes without an event when loss is heavy, so each round also
// does one pull (anti-entropy, as Bimodal Multicast, reference [5]): a
// digest (per origin, the sequence number below which it has everything)
// goes to one random member, which answers with the kept events the asker
// lacks. Repaired events are delivered but not pushed on.
//
// # Tree mode
//
// Config.Tree replaces the random push by forwarding along a fixed tree of
// the members, batched per Period, with digests riding on the pushes and a
// pull every PullEvery rounds (tree.go). It sends a few messages per event
// where random push sends Fanout·TTL, and bounds the path; it suits groups
// whose members all know each other and rarely crash.
//
// # Partial views
//
// Config.View replaces the whole group by a partial view of View members
// (default ViewSize(n) = ⌈3·ln n⌉), as the seed's PrCast allows:
// "processes do not need to know all members of the group" (Gidenstam et
// al. §2). Views are refreshed by a Cyclon shuffle every round (view.go:
// one message and one answer per member and round whatever n is), and
// pushes and pulls go to members of the view. Reach measures what the
// ticket protocol needs (every live member delivers a notice within TTL
// rounds) and CheckViews the overlay (every live member known by a live
// member and knowing one).
//
// # Bounds and drop policy
//
// Everything a process holds is bounded, and nothing is dropped silently
// (unbounded gossip queues are a known failure of serf and consul):
//
//   - Buffer (default 256) bounds the events pushed each round; when more
//     wait, the events with the fewest rounds left go first, as they have
//     spread the most. Counted as "dropped". Between rounds up to 2·Buffer
//     may wait: the cut is made in batches, so a burst costs one sort per
//     Buffer events rather than one per event.
//   - History (default 4096) bounds the events kept for repair; the oldest
//     go first. Counted as "evicted". An event that every process has
//     evicted cannot be repaired any more: agreement holds for events
//     younger than History broadcasts.
//   - A push or repair carries at most 48 KiB of payload (the rest waits for
//     the next round); a payload is at most MaxPayload (32 KiB).
//
// # Fault model and guarantees
//
// Loss, duplication, reordering, crashes. Integrity always (an event is
// delivered at most once, and only as its origin broadcast it); agreement
// among processes that do not crash once loss stops (every event one of
// them delivered, or broadcast, all of them deliver), within the History
// bound. No order: deliveries from one origin may come in any order. A
// process that restarts must broadcast under a new identity (its sequence
// numbers start again at 1). Checker checks integrity and agreement.
package gossip
