// Package sim is roundtable's deterministic discrete-event simulator. It
// runs many node.Machines in one goroutine over virtual time, with seeded
// per-link latency, loss, duplication and reordering, partitions
// (Cut/Isolate/Heal), crashes and restarts (a restart is a fresh machine with
// a new incarnation), paused processes and skewed, drifting clocks. A
// paused process sees the time jump before its queued messages on Resume,
// or, with Options.HeldFirst, some of them first, as a real driver may.
//
// Every message goes through the protocol's real wire.Codec on its way from
// sender to receiver, so encoding bugs surface here too. Duplicates are
// handed to the machines as such: the real driver's replay window would drop
// them, but a machine must not depend on that.
//
// Checkers observe every event and run after every step; the first failure
// stops the run and is reported with the seed that reproduces it. Machines
// ask for timers through Ready.Wake, so idle nodes cost nothing: a
// 1,000-node cluster is simulated without ticking every node every
// millisecond.
//
// Scenario plays transcripts: a file of commands (add 3, deliver 1->2,
// crash 2, cut 1,2/3, tick 50ms, and a package's own) each followed by the
// output it must produce, one line per delivery, loss and event, so that a
// reader can follow a hand-picked interleaving step by step and a change
// that alters it shows as a diff.
package sim
