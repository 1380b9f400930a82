// Package mutex implements distributed mutual exclusion for lockd as pure
// state machines. One Machine runs in each daemon and serves many named
// locks for the daemon's local clients. Four algorithms (Config.Algo):
// central (below), Ricart–Agrawala (ra.go), the crash-tolerant token ring
// (ring.go) and decentralised voting (voting.go); each file states its
// fault model.
//
// # Central coordinator (Tanenbaum ch. 6 "Centralized", Schaffernicht, Topic V)
//
// One process, the coordinator, keeps a FCFS queue per lock name and grants
// the lock to one requester at a time: request, grant, release — three
// messages per entry and exit. The seeds' weakness, the coordinator as a
// single point of failure, is removed: the coordinator is the leader of an
// embedded bully election (package election), and a new coordinator
// rebuilds every holder and queue from what the peers report.
//
// Fault model and why mutual exclusion holds. Processes crash and restart,
// messages are lost, duplicated and reordered, the network partitions,
// processes pause; clocks may be offset arbitrarily and drift by less than
// 10% (the safety margin below). Three rules:
//
//  1. A coordinator grants or renews only while a majority of the
//     processes vouch for it. A vouch answers a ping and promises not to
//     vouch for another coordinator for P = L/2; the coordinator counts
//     it valid until the ping's send time + 0.9·P. (P is half the lease so
//     that a new coordinator has its majority, and learns of the holders,
//     before holders that renew every L/8 see their 0.9·L leases end.) Two coordinators can
//     therefore never both have a valid majority: bully may elect one per
//     partition, but only the majority side grants.
//  2. Grants are leases. A holder counts its lease from the moment it sent
//     the request or renewal the coordinator answered, for 0.9·L; the
//     coordinator counts from when it granted or received the renewal, for
//     L. The holder always gives up first and reports the lock lost (lockd
//     then stops its child); the coordinator then grants the next waiter.
//  3. A new coordinator, once it has a majority, collects reports: locks
//     reported held are reinstalled with their holders and tokens; any
//     other lock is granted only one lease after the takeover, when any
//     lease granted by the previous coordinator has expired.
//  4. Renewals go per member session, not per lock (session.go; the way an
//     etcd lease covers many keys). A lock joins its member's session
//     with its first per-lock renewal (rule 2's renewal, record by
//     record); from then on one MsgSession per L/8 renews every lock in
//     the session, and the coordinator's work per renewal period grows
//     with the members, not with the locks held. Both sides keep the
//     session's count and digest (the XOR of a 64-bit hash of each
//     lock's name, client and token; tokens are never reused). The
//     coordinator extends a session, by a lease from when it takes the
//     renewal, only while it has a majority and only when the member's
//     count and digest equal its own, and answers with its own; the
//     member counts 0.9·L from when it sent the renewal (rule 2), and
//     only for the locks that had joined by then. A lock the coordinator
//     does not count — released, revoked, taken over, reinstalled by a
//     new coordinator that has not seen its renewal — makes the digests
//     differ, and a differing digest renews nothing: an aggregate
//     renewal can extend only a set of grants both sides hold, exactly as
//     the per-lock renewals of that set would. A lost or late one renews
//     nothing it should not: an old renewal that matches the
//     coordinator's current session (a release still on its way) extends
//     the coordinator's lease of a lock the member has already given up,
//     which only delays its next grant; the member applies an answer to
//     the locks of the renewal it answers, counted from that renewal's
//     send time, so a reordered answer gives no lock more than its own
//     renewal earned. Fencing is untouched: a session renews grants,
//     never makes one, so tokens still come only from grants. On a
//     mismatch the member sends again the renewals of locks not yet
//     confirmed and the releases of locks that left its session; a lock
//     whose session cover runs short (half a lease left) is renewed on
//     its own again, which is where a lock the coordinator no longer
//     knows is revoked. A session not renewed for a lease ends, and its
//     locks fall back to their own leases. A new coordinator starts with
//     no sessions; members empty theirs when they follow it.
//
// Tokens: every grant carries coordinator term << 32 | counter. Terms only
// grow (package election), so tokens grow per lock name across failovers.
package mutex
