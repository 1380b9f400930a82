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
// leader after Timeout of silence and starts an election. Schaffernicht's Topic V bounds
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
// # Local health
//
// A fixed timeout reads a starved scheduler as a dead peer: a follower
// that was not run for longer than Timeout wakes to find the leader
// silent, although the leader's heartbeats wait in its own socket. Here,
// as in Lifeguard (Dadgar et al., "Lifeguard: Local Health Awareness for
// More Accurate Failure Detection", §3.1 "Local Health Aware Probe", and
// hashicorp/memberlist's "awareness"), a process keeps a health score
// (fd.Health, 0 to Awareness) of its own timeliness and suspects others
// only by what it observed while it ran:
//
//   - Every Step and Tick compares now with the wake-up the process last
//     asked for (Ready.Wake). Arriving later than that by more than
//     LateSlack means its timer fired late or it did not run to read its
//     frames: the score goes up by one. A follower asks to wake at least
//     once every half Timeout, so that a stall shows up within one.
//   - Two successive numbered heartbeats arriving within a quarter of a
//     Heartbeat, sent a Heartbeat apart, waited in a queue: the score goes
//     up by one.
//   - Signs less than a Timeout apart are one stall and count once; the
//     score drops by one for every HealthDecay without new trouble.
//   - The leader's suspicion timeout (Timeout) stretches to (1+score)× its
//     value, and the time a follower was demonstrably not running (its
//     lateness) is not counted as the leader's silence.
//   - A leader's own stalls show only at the leader, so every heartbeat
//     carries the leader's 1+score (Stretch, with or without leases), and a
//     follower stretches Timeout by the larger of its own 1+score and the
//     leader's latest, at most 1+Awareness: a leader whose timers fire
//     late is not voted out for a stall of up to that many Timeouts. A
//     leader that predates the field sends 0, read as 1. The timeouts of a
//     running election (AnswerTimeout, CoordinatorTimeout) do not stretch:
//     once the leader is suspected, a quick election matters more than a
//     slow member's vote.
//
// With leases, the same score lengthens promises. The leader asks, in each
// heartbeat, for a promise of k·Lease with k = 1+score; a follower promises
// max(k, 1+its own score), at most 1+Awareness, and says in its
// acknowledgement which k it promised (a process that predates the field
// says 0, read as 1). The leader counts each process's acknowledgement
// for k usable periods from the heartbeat's send time, and holds the
// lease until the latest time that a majority's promises all cover. A
// lease that runs out raises the leader's score, so the next lease asks
// for longer promises, and so does a near miss (a renewal with less than
// half the lease left). The lease rule stays as safe as before:
//
//   - A promise of k·Lease from receipt covers, in real time, the leader's
//     k usable periods from the send time, k·(Lease·(1−Drift)/(1+Drift) −
//     Guard) ≤ k·Lease·(1−Drift)/(1+Drift) − Guard, by the argument of
//     "Leases" with k·Lease in place of Lease.
//   - The leader counts only the multiple a follower said it promised,
//     never the one it asked for, and a follower's promise to one leader
//     only grows.
//   - A starting process stays quiet for the longest promise it could have
//     given, (1+Awareness)·Lease.
//
// Stretching suspicion only delays a new election and stretching promises
// only delays the next lease: a new leader still waits for every promise
// to the old one. That is the cost: after a real crash of a leader whose
// score was s, failover takes up to (1+s)·Lease instead of Lease, and a
// follower with score s, or whose leader's was s, suspects after up to
// (1+s)·Timeout of silence.
// Awareness bounds both; a negative Awareness turns local health off.
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
