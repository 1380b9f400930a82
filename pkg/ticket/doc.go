// Package ticket implements a decentralised pool of n numbered tickets as
// a pure state machine (node.Machine): Gidenstam, Koldehofe, Papatriantafilou
// and Tsigas, "Dynamic and fault-tolerant cluster management" (seed 000).
// A process that owns ticket t may do the work numbered t; no two processes
// ever own or coordinate the same ticket at once, and the tickets of
// processes that leave become reusable, with no central server.
//
// # The ring (§3)
//
// Tickets form a cycle: the successor of ticket i is i−1 mod n. Each
// process in the core owns one ticket and coordinates the free tickets from
// its own down to its successor's (exclusive): S_p. Lemma 3.1: the S_p are
// disjoint and cover every ticket, as long as successor pointers are kept
// right, which is what the protocol does:
//
//   - cjoin (Algorithm 1): a joiner sends CJOIN to a coordinator q; q, if it
//     is a coordinator with |S_q| > 1 and no hand-over of its own pending,
//     picks t ∈ S_q \ {own}, makes the joiner its successor and answers
//     ACKCJOIN(t, its old successor r and r's ticket, n, Cview, epochs); the
//     joiner then coordinates t down to r's ticket and sends NEWSUCC to r,
//     and may act once r answers ACKSUCC. Otherwise q answers REJECT.
//     Requests are served one at a time in arrival order (Lemma 3.2).
//   - cleave (Algorithm 2): a leaving process stops acting, then sends
//     CLEAVE(its successor s) to its predecessor p; p serves it only if the
//     sender is its successor: ACKCLEAVE, successor := s, NEWSUCC to s. A
//     leaving process that gets NEWSUCC from a new predecessor answers it
//     with its CLEAVE. It leaves on ACKCLEAVE.
//
// # Where the seed is silent or garbled, and what is done here
//
//   - Names: the message list says ACKJOIN, the algorithm ACKCJOIN; this is
//     ACKCJOIN. NEWSUCC, ACKSUCC and REJECT are used but not listed; they are
//     messages here (msg.go).
//   - Algorithm 2 sets "state_p = exclusion" when serving a CLEAVE; §3's
//     text says the process may have to serve further CLEAVEs until a
//     successor acknowledges. Here serving a CLEAVE means: successor := s,
//     NEWSUCC to s, and no CJOIN is served until s answers ACKSUCC (the
//     process keeps its own ticket meanwhile).
//   - Bootstrap: the first process (Config.Tickets = n) owns ticket n−1 and,
//     being its own successor, coordinates all n.
//   - The seed assumes reliable channels; these are not. Every request
//     (CJOIN, NEWSUCC, CLEAVE) is sent again every Config.Retry until
//     answered, and every answer is idempotent. CJOINs carry an attempt
//     number; a coordinator's answer to an attempt is final and replayed to
//     its duplicates, and older attempts are ignored, so a joiner that was
//     rejected and moved on can never be granted by a late copy (which would
//     give it two places in the ring). Answers are remembered for a minute;
//     a duplicate delayed longer is outside the fault model.
//   - Finding a coordinator with free tickets: the seed's joiner asks the
//     coordinator of a random free ticket, "known by contacting any
//     coordinator". Views go stale between hand-overs, so a rejected joiner
//     walks the ring (REJECT names the rejecter's successor), which visits
//     every coordinator; when the walk comes back round it backs off and
//     starts again from the coordinator of a random free ticket in the last
//     view, or a contact.
//   - A leaving process whose predecessor has not introduced itself yet
//     (its NEWSUCC is on the way) waits for it. A CLEAVE sent to a process
//     that is not the sender's predecessor is answered with a REJECT naming
//     that process's successor (or, once it has left, its last one), which
//     walks the leaver to its real predecessor.
//   - Neighbours leaving together: a leaving process does not serve CLEAVEs,
//     so if a whole stretch of the ring leaves at once nobody would. A
//     leaving process therefore serves its leaving successor's CLEAVE when
//     its ID is lower: it acts on nothing, and only merges what it hands on.
//     The last process of a pool that everyone leaves ends the pool.
//   - Fencing epochs (not in the seed): each ticket's epoch grows by one each
//     time it is handed out; epochs travel with the ranges (ACKCJOIN,
//     CLEAVE), so they only grow.
//
// # Fault model
//
// This package implements §3: processes join and leave at will; links
// lose, duplicate, reorder and delay messages. It does not yet implement
// §4 (crashes, partitions, the rounds of ALIVE and UPDATE messages and the
// exclusion algorithm): a process that crashes keeps its range forever, and
// a joiner whose coordinator crashed waits forever.
//
// # Checkers
//
// Disjoint checks Theorem 3.1 at every instant of a simulation (no ticket in
// two ranges of processes that own a ticket); Covered checks Lemma 3.1 once
// things settle (every ticket owned or coordinated, successor and
// predecessor pointers consistent, no joiner waiting while a ticket is
// free); EpochChecker checks that epochs only grow per ticket.
package ticket
