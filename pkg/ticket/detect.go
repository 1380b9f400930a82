package ticket

import (
	"math/rand/v2"
	"time"
)

// DetectionBound is the failure-detection time of a pool run with cfg:
// the longest, from the moment a process of the core stops answering
// (crashed, paused, or cut off from every other member), until its
// predecessor has excluded it and holds its ticket again (doc.go, "Crashes
// and slow links" and "Busy hosts"):
//
//   - weak failure detection: Suspect rounds without an ACKUPDATE, up to
//     Stretch times that on a host whose rounds run late;
//   - the exclusion's requests (EXCLUDE, then REQCOORD), each sent up to
//     exTries times δ apart;
//   - the temporary coordinator's wait, tempFor(1), which counts the
//     longest vouch (Grant windows, which a wait counts when its voters
//     report granting them: rounds.go, waitFor), a newcomer's grace, the clock drift and
//     Config.Margin (the kill grace of a command the excluded process ran).
//
// Grants on the other members wait on an excluded ticket at most this long
// (plus whatever delays their own rounds); zero values take the defaults,
// as New does.
func DetectionBound(cfg Config) time.Duration {
	cfg.FaultTolerant = true
	if cfg.ID == 0 {
		cfg.ID = 1
	}
	if cfg.Tickets == 0 {
		cfg.Tickets = 1
	}
	cfg.Rand = rand.New(rand.NewPCG(1, 1))
	m, err := New(cfg)
	if err != nil {
		return 0
	}
	c := m.cfg
	return time.Duration(c.Stretch*c.Suspect)*c.Round + 2*exTries*c.Delta + m.tempFor(1)
}
