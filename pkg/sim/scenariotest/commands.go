package scenariotest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// Links is a transcript's latency: 1ms on every link but those a
// "slow A->B D" command set (messages sent on it from then on take D).
// Its Latency goes in sim.Options.
type Links map[[2]node.ID]time.Duration

// Latency is sim.Options' Latency for these links.
func (l Links) Latency(_ *rand.Rand, from, to node.ID) time.Duration {
	if d, ok := l[[2]node.ID{from, to}]; ok {
		return d
	}
	return time.Millisecond
}

// SlowCommand is "slow A->B D": messages sent from A to B from now on take
// D (0: back to 1ms); what is in flight keeps its time.
func SlowCommand[M any](l Links) func(*sim.Run[M], []string) error {
	return func(r *sim.Run[M], args []string) error {
		if len(args) != 2 {
			return fmt.Errorf("usage: slow A->B DURATION")
		}
		from, to, err := r.Link(args[0])
		if err != nil {
			return err
		}
		if from == node.None || to == node.None {
			return fmt.Errorf("slow wants two members, not %q", args[0])
		}
		d, err := time.ParseDuration(args[1])
		if err != nil || d < 0 {
			return fmt.Errorf("slow wants a duration such as 200ms, not %q", args[1])
		}
		if d == 0 {
			delete(l, [2]node.ID{from, to})
		} else {
			l[[2]node.ID{from, to}] = d
		}
		return nil
	}
}

// FailNow ends the output with a checker's verdict ("failed: ..."), as
// one that sees a bug as it happens does: the simulation's invariant
// (which returns *v) reports it at once. A nil err does nothing.
func FailNow[M any](r *sim.Run[M], v *error, err error) {
	if err == nil {
		return
	}
	*v = err
	r.Sim.At(r.Sim.Now(), func() {})
	r.Sim.RunFor(0)
}
