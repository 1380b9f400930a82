package sim

import (
	"math/rand/v2"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Fault is one step of a random fault schedule.
type Fault uint8

// The faults a schedule applies to the node it drew, or to the network.
const (
	Skip      Fault = iota // nothing this step
	Crash                  // Crash(id)
	Restart                // Restart(id)
	Pause                  // Pause(id)
	Resume                 // Resume(id)
	Partition              // RandomPartition
	Isolate                // Isolate(id)
	Heal                   // Heal
)

// Faults is a random fault schedule: Steps times, draw a node and a fault
// from the seeded rand, apply the fault, then run the simulation for Gap
// plus a whole number of milliseconds below Jitter. The draws come in that
// order (node, fault, what Pick draws, what a partition draws, the pause),
// so a seed replays the same schedule.
type Faults struct {
	Steps int
	// Faults are drawn uniformly; list one twice to make it twice as
	// likely.
	Faults []Fault
	// Gap and Jitter: the time run after each step.
	Gap, Jitter time.Duration
	// Pick, when set, may replace the fault drawn for id (drawing from the
	// same rand) or return Skip, for example to keep one node up.
	Pick func(f Fault, id node.ID) Fault
	// Done, when set, is called after a fault is applied, at the same
	// virtual time; an error ends the schedule.
	Done func(f Fault, id node.ID) error
}

// RunFaults plays the schedule fs with rand r. It returns the first
// error of Done or of the simulation (a checker's verdict).
func (s *Sim[M]) RunFaults(r *rand.Rand, fs Faults) error {
	ids := s.IDs()
	for step := 0; step < fs.Steps; step++ {
		id := ids[r.IntN(len(ids))]
		f := fs.Faults[r.IntN(len(fs.Faults))]
		if fs.Pick != nil {
			f = fs.Pick(f, id)
		}
		switch f {
		case Crash:
			s.Crash(id)
		case Restart:
			s.Restart(id)
		case Pause:
			s.Pause(id)
		case Resume:
			s.Resume(id)
		case Partition:
			s.RandomPartition(r)
		case Isolate:
			s.Isolate(id)
		case Heal:
			s.Heal()
		}
		if f != Skip && fs.Done != nil {
			if err := fs.Done(f, id); err != nil {
				return err
			}
		}
		d := fs.Gap
		if fs.Jitter >= time.Millisecond {
			d += time.Duration(r.IntN(int(fs.Jitter/time.Millisecond))) * time.Millisecond
		}
		if err := s.RunFor(d); err != nil {
			return err
		}
	}
	return nil
}
