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
//   - the temporary coordinator's wait for the excluded ticket,
//     tempFor(2), which counts the longest vouch (Grant windows, which a
//     wait counts when its voters report granting them: rounds.go,
//     waitFor), a newcomer's grace, the clock drift and Config.Margin (the
//     kill grace of a command the excluded process ran).
//
// That is a process whose range holds its own ticket only, as every
// process's does while no ticket is free. Grants on the other members
// wait on an excluded ticket at most this long (plus whatever delays their
// own rounds); zero values take the defaults, as New does. A process whose
// range also held a free ticket (one given back or reclaimed, not yet
// taken) costs DetectionBoundFor.
func DetectionBound(cfg Config) time.Duration { return DetectionBoundFor(cfg, 1) }

// DetectionBoundFor is DetectionBound for a process whose range held
// tickets tickets when it stopped answering: its own and tickets−1 free
// ones. Through a free ticket it may have let a process join that nobody
// else knows yet, so the exclusion counts a chain of min(tickets, k+1)
// processes in E_pq, one stretched vouch more for each past the first
// (openTickets, tempChain; doc.go "Safety: a newcomer inside E_pq"), and
// one round and δ more per excluded ticket (the seed's TempRounds).
func DetectionBoundFor(cfg Config, tickets int) time.Duration {
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
	tickets = max(tickets, 1)
	c := m.cfg
	return time.Duration(c.Stretch*c.Suspect)*c.Round + 2*exTries*c.Delta + m.tempChain(uint32(tickets)+1, 1, tickets)
}
