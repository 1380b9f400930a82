// Package consensus implements FloodSet (crash faults) and Exponential
// Information Gathering (Byzantine faults) as pure state machines over
// synchronous rounds (package rounds).
//
// Source: Schaffernicht, Topic V (Programming of Distributed Systems, Topic V:
// "Floodset algorithm", "Exponential Information Gathering", "The Byzantine
// Generals Problem", "A consensus algorithm", EIG limits n > 3f).
//
// FloodSet: in rounds 1..f+1 every process broadcasts the set W of values
// it knows (round 1: its own); at the end of round f+1 it decides by a
// fixed rule applied to W (default: the minimum). With at most f crashes,
// one of the f+1 rounds is crash-free, after which every W is equal.
//
// EIG: every process keeps a tree whose nodes are labelled by sequences of
// distinct process IDs; val(σ·j) is what j said σ's last element said
// (seed: "n3 says that n2 said that n1 said v1"). In round k a process sends
// every label of length k−1 that does not contain itself; silence is
// recorded as the default value. After f+1 rounds it decides by recursive
// majority from the leaves up (no strict majority: the default). It
// tolerates f Byzantine processes when n > 3f.
//
// Signed messages (Schaffernicht's Topic V, "EIG limits": with integrity n > 2f
// suffices): Lamport, Shostak and Pease's SM(f), run with every process as
// a commander at once, rather than EIG with signature chains, because a
// relay that cannot change a value need only flood each origin's values
// once (at most two per origin), where EIG's tree grows as n^f. The rules,
// what is signed and the agreement argument are in signed.go.
//
// # Starting together, and never deciding in silence
//
// The seed's model (Topic V, "Floodset algorithm": synchronous rounds, at
// most f processes crash) assumes every process begins round 1 at the
// same moment and that a process silent in a round has crashed and stays
// silent. Real processes are launched one by one, so a process that is
// late is, to the others, one that crashed before round 1; but it is not
// crashed, and if nothing stops it, it runs rounds of its own and decides
// on what it alone knows (one member started 1.3 s early decided its own
// value while the other three decided theirs, all exiting 0). FloodSet's
// promise cannot be kept for a process outside the model, so the machine
// makes the model's assumptions hold where it can and refuses to decide
// where it sees them fail:
//
//   - A start barrier (barrier.go), unless the processes share a start
//     time (Config.Start, --start-at, on clocks that agree to well within
//     a round). Each process announces itself to every peer once per
//     round length and starts round 1 as soon as it has heard from every
//     peer; a peer's round-1 message starts a process at once, so every
//     process that is up begins within one message delay of the first.
//     A peer that never comes up is a crash before round 1, which f
//     covers: after Wait, processes start without the rest once n−f of
//     them (and a majority) have each waited Wait. A shared --start-at
//     alone could not do this: it only moves the race to whichever member
//     is launched after the start time, and it needs synchronised clocks.
//   - A process that misses some round's messages from more than f peers
//     does not decide (UndecidedEvent, exit 69): more than f cannot all
//     have crashed, so it was itself cut off or late, and its W may lack a
//     value the others have.
//   - A peer silent in one round is crashed for good: its later messages
//     are ignored. The crash model allows a process to fall silent, not to
//     come back; a late process that came back would carry its value into
//     the last round and reach only some processes with it, as a crash
//     mid-broadcast does, but without having used up one of the f+1
//     rounds that FloodSet's chain argument counts on.
//   - Round 1 needs a majority: a process that heard fewer than half its
//     peers in round 1 does not decide. With f < n/2 this follows from the
//     rule above; with f ≥ n/2 the silent majority may be late rather than
//     crashed and run rounds of its own, and two majorities cannot both
//     miss each other, as they share a process that starts only once. The
//     start barrier asks for the same majority.
//
// So when at most f processes crash and messages between running
// processes arrive within their round, processes that start at different
// times either all decide the same value or, where a process's start came
// too late or too early to take part in every round, it ends without a
// decision and says so: two processes never decide differently, both
// exiting 0. The property test (TestSimStaggeredStarts) starts processes
// together, one 1.3 s early, scattered over 3 s and late while the rest
// run, with up to f crashes mid-broadcast, and finds agreement or an
// UndecidedEvent on every seed; a planted bug that decides anyway
// disagrees. Lost messages are outside the model (a process whose
// messages are lost is a send-omission fault, not a crash): the rules
// above refuse a decision in most such runs, but FloodSet cannot promise
// agreement for a process whose own messages were lost.
package consensus
