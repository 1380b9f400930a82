// Package mcast is reliable multicast over a fixed group, as a pure state
// machine, with three delivery guarantees (Nita-Rotaru's CS7610 notes,
// "Reliable multicast"; Tanenbaum & van Steen §6.2–6.3):
//
//   - Unordered: integrity (a correct member delivers a message at most
//     once, and only as its sender sent it), validity (a correct member
//     delivers its own messages) and agreement (what one correct member
//     delivers, all correct members deliver).
//   - FIFO: the seed's algorithm. Each sender numbers its messages
//     (S_G^p, carried with each); a receiver delivers sender q's message S
//     when S = R_G^q + 1, holds it back when S is larger, drops it when
//     smaller.
//   - Causal: the seed's vector clocks, one per group. A sender increments
//     its own entry and sends the whole vector; a receiver i holds a
//     message from j back until V_j[j] = V_i[j] + 1 and V_j[k] ≤ V_i[k] for
//     every k ≠ j, then delivers it and increments V_i[j].
//
// # Reliability over lossy links (the seeds assume reliable channels)
//
// Every member sends every Period a digest to every other member: per
// sender, how many messages it has received without a gap (Recv) and
// delivered (Deliv). A member that holds messages another lacks sends them,
// whoever their sender was: that relays a crashed sender's messages to the
// members it did not reach, which is what agreement needs (a sender that
// crashes mid-multicast is the seed's "naïve approach" failure). A message
// that arrives after a gap makes the receiver send its digest at once, so
// a loss costs about one round trip, not a Period. A message is forgotten
// once every member's digest shows it received (and this member has
// delivered it). Members that stay silent (Suspect) keep messages alive up
// to Keep held messages; past that, what every unsuspected member has is
// forgotten, and counted as "abandoned" (a member that comes back after
// that can no longer get them: pkg/mcast/group's views handle members that
// leave).
//
// # Fault model
//
// Loss, duplication, reordering, partitions that heal, paused members and
// crashes (crashed members stay down: a member that restarts must join
// under a new ID; pkg/mcast/group adds membership). Check judges a run from the
// members' logs: integrity, the order, and agreement among the members that
// did not crash, with happens-before rebuilt from the logs.
//
// # The two groups
//
// This package is the fixed group; pkg/mcast/group is the dynamic group
// (views, total orders, safe delivery, extended virtual synchrony). Each
// has its own machine, frames and checker (Machine, Msg, Codec, Check
// here; group.Group, group.Msg, group.Codec, group.CheckViews there).
// What both use is here: the message (Item), MaxPayload and the wire
// bounds (MaxItems, MaxMembers, MaxSeq, FrameBudget), Cost and the
// window's events (DoneEvent, RoomEvent, ErrFull), and the checkers'
// counterexamples (Violation, Evidence).
package mcast
