// Package rounds provides synchronous rounds over a real network for
// round-based protocols (FloodSet, EIG), as pure bookkeeping: the caller
// passes every timestamp and every arrival.
//
// A Schedule fixes when each round must end: round r (1-based) ends at
// Start + r·Length. A Tracker follows one round: which peers were heard,
// which are suspected (they missed a round's deadline), and whether the
// round may end early because every non-suspected peer has been heard.
// Messages carry their round number; a message for a round already over is
// late (dropped and counted), one for a later round is held until then.
//
// The synchronous model of the seeds assumes every message sent in round r
// by a process that has not crashed arrives before round r ends; Length is
// that bound and must exceed the maximum delivery plus handling time. A
// peer that misses a deadline is treated as crashed from then on, which is
// exactly the crash-failure model FloodSet tolerates.
package rounds
