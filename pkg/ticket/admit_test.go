package ticket

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// admitRun: member 1's second process (slot 1, no PrCast) founds a pool of
// four by a MsgJoin and is told (MsgAdmit, unless admit is false) that
// its member admits no other member's process for the first admitFor;
// member 2's process, whose only contact is that slot, asks to join by a
// MsgJoin. A MsgJoin with nobody to ask (member 3, an empty book) must
// report NoContactEvent. It returns when member 2's process took a
// ticket, after the pool was founded, or an error.
func admitRun(seed uint64, admit bool) (took time.Duration, err error) {
	r := rand.New(rand.NewPCG(seed, 74))
	const admitFor = time.Second
	slot1 := node.ID(1<<24 | 1)
	ids := []node.ID{slot1, 2, 3}
	members := map[node.ID]*Member{}
	s := sim.New[Msg](sim.Options{Seed: seed, MinLatency: time.Millisecond, MaxLatency: time.Duration(2+r.IntN(6)) * time.Millisecond},
		Codec{}, func(id node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Rand: rng, FaultTolerant: true, Round: faultRound, Retry: 20 * time.Millisecond}
			var contacts []node.ID
			switch id {
			case slot1:
				cfg.Tickets = 4
			case 2:
				contacts = []node.ID{slot1}
			}
			m, err := NewMember(cfg, func() []node.ID { return contacts }, id != slot1)
			if err != nil {
				panic(err)
			}
			members[id] = m
			return m
		}, ids...)
	var founded, joined time.Time
	noContact := false
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		switch ev.(type) {
		case TakenEvent:
			if id == slot1 && founded.IsZero() {
				founded = at
			}
			if id == 2 && joined.IsZero() {
				joined = at
			}
		case NoContactEvent:
			if id != 3 {
				return fmt.Errorf("process %d has contacts but reported none", id)
			}
			noContact = true
		}
		return nil
	}
	s.Invariant = func() error {
		ms := map[node.ID]*Machine{}
		for id, m := range members {
			ms[id] = m.Machine()
		}
		return Disjoint(ms)
	}
	s.Inject(slot1, Msg{Type: MsgJoin})
	if admit {
		s.Inject(slot1, Msg{Type: MsgAdmit, Attempt: uint64(s.LocalNow(slot1).Add(admitFor).UnixNano())})
	}
	s.Inject(3, Msg{Type: MsgJoin})
	s.At(s.Now().Add(time.Duration(50+r.IntN(200))*time.Millisecond), func() { s.Inject(2, Msg{Type: MsgJoin}) })
	if err := s.RunFor(admitFor + 2*time.Second); err != nil {
		return 0, fmt.Errorf("seed %d: %v", seed, err)
	}
	switch {
	case founded.IsZero():
		return 0, fmt.Errorf("seed %d: the MsgJoin with Tickets set founded no pool", seed)
	case !noContact:
		return 0, fmt.Errorf("seed %d: a MsgJoin with nobody to ask reported nothing", seed)
	case joined.IsZero():
		return 0, fmt.Errorf("seed %d: member 2's process never took a ticket", seed)
	}
	took = joined.Sub(founded)
	if admit && took < admitFor-10*time.Millisecond {
		return took, fmt.Errorf("seed %d: member 2's process took a ticket %v after the founding, while the founder's member admitted nobody for %v", seed, took, admitFor)
	}
	return took, nil
}

// TestSimJoinsAsInputs: founding and joins are machine inputs (MsgJoin),
// and a founder's other process keeps the founder-admission rule it is
// told of (MsgAdmit): another member's process gets a place from it only
// once the founder's promises end, and then within a second. Without the
// MsgAdmit the same joiner gets in at once, which shows the check can
// fail.
func TestSimJoinsAsInputs(t *testing.T) {
	var worst time.Duration
	runs := simtest.EverySeed(t, func(seed uint64) error {
		took, err := admitRun(seed, true)
		worst = max(worst, took)
		if err == nil && took > 2*time.Second {
			err = fmt.Errorf("seed %d: member 2's process took a ticket only %v after the founding", seed, took)
		}
		return err
	})
	simtest.EverySeedOf(t, sim.Seeds()[:min(5, len(sim.Seeds()))], func(seed uint64) error {
		took, err := admitRun(seed, false)
		if err == nil && took >= time.Second {
			err = fmt.Errorf("seed %d: without MsgAdmit the joiner still waited %v", seed, took)
		}
		return err
	})
	t.Logf("%d seeds: joins as inputs, the founder's other process admitted member 2 after %v at most", runs, worst)
}
