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
		Quorum: true} // a refound needs a majority of the members, a lend their lease (ticket's doc.go)
}

// DetectionTime is how long, at most, a member that stops answering
// (crashed, stopped, or cut off from the others) keeps its ticket from
// the rest of the pool: ticket.DetectionBound under the daemon's
// settings (--round, --k, --max-kill-grace and the busy-host Stretch).
func DetectionTime(c Config) time.Duration { return ticket.DetectionBound(c.machineConfig()) }
