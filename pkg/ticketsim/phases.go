package ticketsim

import (
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/ticket"
)

// PhaseRounds is a reclaim, from the crash of a holder to its ticket in
// a live process's range, split into phases (in protocol rounds):
//
//   - Detection: until an exclusion covering the ticket starts (the
//     predecessor missed Suspect ACKUPDATEs, Algorithm 5's trigger).
//   - Quorum: until a quorum of voters acknowledged it (EXCLUDE,
//     ACKEXCLUDE, REQCOORD, ACKCOORD).
//   - Temporary: the temporary coordinator's wait less the kill grace:
//     the seed's dist(p,q) rounds, plus the window an excluded process's
//     last ALIVEs vouch for it and a newcomer's grace (pkg/ticket's doc,
//     "Safety").
//   - KillGrace: Config.Margin, the time a host needs to stop what an
//     excluded member ran.
//   - HandOver: from the reclaim until the round in which the ticket was
//     seen in a live acting process's range (the simulator looks once a
//     round, so up to one round).
type PhaseRounds struct {
	Detection float64 `json:"detection"`
	Quorum    float64 `json:"exclusion_quorum"`
	Temporary float64 `json:"temporary_coordinator"`
	KillGrace float64 `json:"kill_grace"`
	HandOver  float64 `json:"hand_over"`
}

func (p *PhaseRounds) add(q PhaseRounds) {
	p.Detection += q.Detection
	p.Quorum += q.Quorum
	p.Temporary += q.Temporary
	p.KillGrace += q.KillGrace
	p.HandOver += q.HandOver
}

func (p PhaseRounds) mean(n int) PhaseRounds {
	f := float64(n)
	return PhaseRounds{p.Detection / f, p.Quorum / f, p.Temporary / f, p.KillGrace / f, p.HandOver / f}
}

// Total is the reclaim's length.
func (p PhaseRounds) Total() float64 {
	return p.Detection + p.Quorum + p.Temporary + p.KillGrace + p.HandOver
}

// reclaimPhases times one crashed ticket's reclaim from the machines'
// events: the first exclusion, temporary coordinatorship and reclaim
// that cover it.
type reclaimPhases struct {
	crash, excluding, temporary, reclaimed time.Time
	margin                                 time.Duration
}

// note takes one event of a pool of n tickets; t is the crashed ticket.
func (p *reclaimPhases) note(at time.Time, ev node.Event, t, n uint32) {
	// covers: t lies strictly between from and to going down the ring.
	covers := func(from, to uint32) bool {
		d := (from - t + n) % n
		return d > 0 && d < (from-to+n)%n || from == to && t != from
	}
	switch e := ev.(type) {
	case ticket.ExcludingEvent:
		if p.excluding.IsZero() && covers(e.From, e.To) {
			p.excluding = at
		}
	case ticket.TemporaryEvent:
		if p.temporary.IsZero() && !p.excluding.IsZero() && covers(e.From, e.To) {
			p.temporary, p.margin = at, e.Margin
		}
	case ticket.ReclaimedEvent:
		// Reclaimed names the tickets handed back, From down to To.
		if p.reclaimed.IsZero() && !p.temporary.IsZero() && covers((e.From+1)%n, (e.To-1+n)%n) {
			p.reclaimed = at
		}
	}
}

func (p *reclaimPhases) complete() bool { return !p.reclaimed.IsZero() }

// rounds splits the reclaim, seen reusable at seen, into its phases.
func (p *reclaimPhases) rounds(seen time.Time, round time.Duration) PhaseRounds {
	r := func(d time.Duration) float64 { return float64(d) / float64(round) }
	return PhaseRounds{
		Detection: r(p.excluding.Sub(p.crash)),
		Quorum:    r(p.temporary.Sub(p.excluding)),
		Temporary: r(p.reclaimed.Sub(p.temporary) - p.margin),
		KillGrace: r(p.margin),
		HandOver:  r(seen.Sub(p.reclaimed)),
	}
}
