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
