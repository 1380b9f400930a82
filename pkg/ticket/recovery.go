package ticket

import "time"

// joinRounds is how many rounds a frozen member's join takes once its
// promise ends, a lost CJOIN retried and the link made included.
const joinRounds = 10

// RecoveryBound is how long after the last stall of a pool ends every
// member serves again (its process in the core, holding a lease), under
// Config.Quorum, when no member is down and the links deliver (doc.go,
// "After a refound: liveness").
func RecoveryBound(cfg Config) time.Duration {
	h := &Member{m: &Machine{cfg: cfg}, base: cfg}
	if h.m.cfg.Stretch <= 0 {
		h.m.cfg.Stretch = 1
	}
	if h.m.cfg.Drift <= 0 {
		h.m.cfg.Drift = 0.01
	}
	R := h.round()
	pf := time.Duration(h.promiseFor())
	retry := (2*pf+1)*R + cfg.Margin
	return h.promiseTime() + refoundAfter*R + h.foundBy() + retry + h.promiseTime() + joinRounds*R
}
