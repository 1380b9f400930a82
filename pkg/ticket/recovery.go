package ticket

import "time"

// joinRounds is how many rounds a member's join takes once its promise
// has ended: a CJOIN, the grant and the link, with a lost message retried.
const joinRounds = 10

// RecoveryBound is how long after the last stall of a pool ends every
// member serves again (its process in the core, holding a lease) under
// Config.Quorum, when every member runs and the links deliver (cfg's
// Round, Margin, Stretch and Drift count). The terms (doc.go, "After
// a refound: liveness"):
//
//   - a promise given just before the stall ends at most promiseTime
//     after it;
//   - a member then joins for refoundAfter rounds before it probes;
//   - probers that take each other's promises give up, wait for the
//     promises they heard of (promiseTime from their probe), join for
//     refoundAfter rounds and ask again at most promiseFor rounds later,
//     at random (one such collision is counted);
//   - the members that promised the prober that founds join its pool
//     when their promise ends (promiseTime after the probe, which
//     covers its founding, foundBy), in joinRounds.
func RecoveryBound(cfg Config) time.Duration {
	if cfg.Stretch <= 0 {
		cfg.Stretch = 1
	}
	if cfg.Drift <= 0 {
		cfg.Drift = 0.01
	}
	h := &Member{m: &Machine{cfg: cfg}, base: cfg}
	R := h.round()
	retry := h.promiseTime() + time.Duration(refoundAfter+h.promiseFor())*R
	return h.promiseTime() + refoundAfter*R + retry + h.promiseTime() + joinRounds*R
}
