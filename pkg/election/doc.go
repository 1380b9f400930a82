// Package election implements leader election as a pure state machine
// (node.Machine): the bully algorithm, the ring algorithm with a member
// list, and Chang–Roberts extrema finding on a ring.
//
// Sources: Schaffernicht, Topic V (Programming of Distributed Systems, "Election
// algorithms": bully, Chang's ring, t > 2·MDT + MHT), Tanenbaum ch. 6 (Tanenbaum &
// van Steen §6.5: election by bullying, election in a ring) and Nita-Rotaru, 7610
// (Nita-Rotaru, leader election: ring algorithm, bully, message costs).
//
// # Terms
//
// Every leadership has a term, a number that only grows. Terms are owned:
// with the peers sorted by ID, the process at index i may only lead terms T
// with T mod n = i, and a winner takes the smallest owned term above every
// term it has seen. Two processes therefore can never lead the same term,
// even in a partition where both believe they lead; a reader of the term (a
// fencing check) always knows which of two leaders is newer. A process that
// learns of a higher term than the one it leads steps down.
//
// # Failure detection and timing
//
// The leader sends a heartbeat every Heartbeat. A follower suspects the
// leader after Timeout of silence and starts an election. Seed 001 bounds
// the wait for a reply by t > 2·MDT + MHT (maximum delivery time there and
// back plus maximum handling time); AnswerTimeout is that t, and the
// follower's Timeout must additionally cover one heartbeat period:
//
//	AnswerTimeout > 2·MDT + MHT
//	Timeout       > Heartbeat + MDT + MHT (and ≥ 2·Heartbeat, so one lost heartbeat is tolerated)
//
// The defaults (Heartbeat 50ms, Timeout 200ms, AnswerTimeout 50ms) allow
// three consecutive heartbeat losses and an MDT of up to ~20ms.
//
// # Leases
//
// Terms keep two leaders apart for a reader that checks them, but during a
// partition or a pause the old leader does not know it was replaced, so
// two leaders can act at once. With Config.Lease set, a leader may act only
// while it holds a lease, and no two processes ever hold one at the same
// real time. The seeds stop at election; the rule is the read lease of
// Chandra et al. ("Paxos made live") and of Raft's §9, here over heartbeats:
//
//   - The leader numbers its heartbeats. A follower that accepts the
//     heartbeat's leader answers with MsgLeaseAck and thereby promises to
//     acknowledge no other leader for Lease on its own clock, from receipt.
//     While promised, it still follows elections, but acknowledges nobody
//     else; a newly elected leader simply waits for the old promises to run
//     out.
//   - The leader holds the lease from the send time s of the newest
//     heartbeat that a majority, itself included, acknowledged, until
//     s + Lease·(1−Drift)/(1+Drift) − Guard on its own clock. Any two
//     majorities share a process, whose promise covers the old lease in
//     real time whenever every clock runs within a factor 1±Drift of real
//     time (the clock-rate assumption; offsets do not matter, only rates).
//     Guard leaves time to stop what the lease protects.
//   - A leader counts itself only under the same rule: a process promised
//     to another leader does not count itself before the promise ends.
//   - A process that starts (or restarts: promises are not persisted)
//     acknowledges nobody for one Lease.
//   - A leader that resigns (MsgResign) has stopped what it ran, so its
//     followers' promises to it end at once.
//
// The cost is the wait for the old promises: a new leader holds its lease
// at most one Lease after the old leader's last acknowledged heartbeat,
// and a leader cut off from a majority loses its lease within one Lease.
//
// # Filling the seeds' gaps
//
// The seeds assume reliable links. Here ring hops are acknowledged; a
// successor that does not acknowledge within AnswerTimeout is skipped, as
// the seeds skip dead successors. Duplicated ring messages are recognised
// by (origin, round). Any process that sees a leader with lower priority
// than its own starts an election ("the biggest guy in town always wins",
// Tanenbaum ch. 6), which also repairs outcomes distorted by message loss and
// reunites partitions.
package election
