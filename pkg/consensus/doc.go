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
// Signed messages (seed 001, "EIG limits": with integrity n > 2f
// suffices): Lamport, Shostak and Pease's SM(f), run with every process as
// a commander at once, rather than EIG with signature chains, because a
// relay that cannot change a value need only flood each origin's values
// once (at most two per origin), where EIG's tree grows as n^f. The rules,
// what is signed and the agreement argument are in signed.go.
package consensus
