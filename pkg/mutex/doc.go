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
//
// Tokens: every grant carries coordinator term << 32 | counter. Terms only
// grow (package election), so tokens grow per lock name across failovers.
package mutex
