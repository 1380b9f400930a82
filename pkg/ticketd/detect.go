package ticketd

import (
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/ticket"
)

// machineConfig is the ticket.Config every process of the member runs
// under (its ID, pool size and Rand are set per process).
func (c Config) machineConfig() ticket.Config {
	return ticket.Config{FaultTolerant: true, K: c.K, Round: c.Round,
		Margin: c.KillGrace + 4*cli.CheckEvery + 50*time.Millisecond, Floor: c.Floor, Stretch: Stretch,
		Quorum: true, // a refound needs a majority of the members, a lend their lease (ticket's doc.go)
		Phases: true} // a reclaim's phases, logged
}

// DetectionTime is how long, at most, a member that stops answering
// (crashed, stopped, or cut off from the others) keeps its ticket from
// the rest of the pool: ticket.DetectionBound under the daemon's
// settings (--round, --k, --max-kill-grace and the busy-host Stretch),
// for a member whose range holds its own ticket only.
func DetectionTime(c Config) time.Duration { return ticket.DetectionBound(c.machineConfig()) }

// DetectionTimeFor is DetectionTime for a member whose range held tickets
// tickets when it stopped answering (its own and free ones: a ticket just
// given back or reclaimed and not yet taken), ticket.DetectionBoundFor.
// The member that excludes it logs how many it excluded (the line
// LogExclusionAgreed, its LogKeyTickets attribute).
func DetectionTimeFor(c Config, tickets int) time.Duration {
	return ticket.DetectionBoundFor(c.machineConfig(), tickets)
}
