package ticket

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/scenariotest"
)

// transcript plays the ticket transcripts: §4 (fault tolerant) with k = 1
// and 50ms rounds; process 1 founds a pool of 8 tickets, the others join
// through every other process when told to (join N). Fencing
// (EpochChecker) and Theorem 4.1 (DisjointActing over the processes that
// may act) are checked after every step. bug switches a planted bug on;
// stretch is Config.Stretch (0: none).
func transcript(bug bug, stretch int) *sim.Scenario[Msg] {
	machines := map[node.ID]*Machine{}
	return &sim.Scenario[Msg]{
		Codec: Codec{},
		Machine: func(id node.ID, peers []node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
			var contacts []node.ID
			for _, o := range peers {
				if o != id {
					contacts = append(contacts, o)
				}
			}
			cfg := Config{ID: id, Rand: rng, Contacts: contacts, FaultTolerant: true, K: 1, Round: 50 * time.Millisecond,
				Retry: 20 * time.Millisecond, bug: bug, Stretch: stretch}
			if id == 1 && inc == 1 {
				cfg.Tickets, cfg.Contacts = 8, nil
			}
			m, err := New(cfg)
			if err != nil {
				panic(err)
			}
			machines[id] = m
			return m
		},
		Format: func(m Msg) string {
			m.Attempt = 0          // drawn at random: it says nothing here
			m.Stamp, m.Echo = 0, 0 // clock readings (the lines' own times say when)
			if m.Stretch == 1 {
				m.Stretch = 0 // on time: shown only when a sender says it is late
			}
			return strings.ReplaceAll(sim.FormatMsg(m), fmt.Sprintf(" ticket=%d", NoTicket), "")
		},
		Status: func(s *sim.Sim[Msg], id node.ID, m node.Machine[Msg]) string {
			t, e, ok := m.(*Machine).Ticket()
			if !ok {
				return m.(*Machine).State()
			}
			return fmt.Sprintf("%s ticket %d epoch %d", m.(*Machine).State(), t, e)
		},
		Setup: func(r *sim.Run[Msg]) {
			s, epochs := r.Sim, NewEpochChecker()
			s.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
				if e, ok := ev.(TakenEvent); ok {
					return epochs.Observe(id, e)
				}
				return nil
			}
			s.Invariant = func() error {
				live := map[node.ID]*Machine{}
				for id, m := range machines {
					if s.Alive(id) {
						live[id] = m
					}
				}
				return DisjointActing(live, func(id node.ID) bool { return live[id].MayAct(s.LocalNow(id)) })
			}
		},
		Commands: map[string]func(*sim.Run[Msg], []string) error{
			// join N: process N asks for a ticket.
			"join": func(r *sim.Run[Msg], args []string) error {
				if len(args) != 1 {
					return fmt.Errorf("usage: join N")
				}
				id, err := r.ID(args[0])
				if err != nil {
					return err
				}
				return r.Inject(id, Msg{Type: MsgJoin})
			},
			// leave N: process N gives its ticket back (CLEAVE).
			"leave": func(r *sim.Run[Msg], args []string) error {
				if len(args) != 1 {
					return fmt.Errorf("usage: leave N")
				}
				id, err := r.ID(args[0])
				if err != nil {
					return err
				}
				return r.Inject(id, Msg{Type: MsgLeave})
			},
		},
	}
}

// members plays the refound transcripts (testdata/refound-*.txt):
// members as ticketd runs them (Member, PrCast on), each keeping a state
// file (its mark, read back by a restarted member), §4 with k = 1 and
// 50ms rounds, a pool of one ticket more than there are members; process
// 1 founds it. "join N" sets member N up (its group, a durable state
// file) and makes it join. The checkers are transcript's, over the
// members' current Machines.
func members(bug bug) *sim.Scenario[Msg] {
	sc := transcript(bug, 0)
	ms := map[node.ID]*Member{}
	stateFile := map[node.ID]uint64{}
	var peers []node.ID
	sc.Machine = func(id node.ID, all []node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
		peers = all
		cfg := Config{ID: id, Rand: rng, FaultTolerant: true, K: 1, Round: 50 * time.Millisecond,
			Retry: 20 * time.Millisecond, bug: bug, Floor: stateFile[id]}
		if id == 1 && inc == 1 {
			cfg.Tickets = len(all) + 1
		}
		m, err := NewMember(cfg, func() []node.ID {
			var c []node.ID
			for _, o := range peers {
				if o != id {
					c = append(c, o)
				}
			}
			return c
		}, true)
		if err != nil {
			panic(err)
		}
		ms[id] = m
		return m
	}
	sc.Status = func(s *sim.Sim[Msg], id node.ID, m node.Machine[Msg]) string {
		mm := m.(*Member).Machine()
		t, e, ok := mm.Ticket()
		if !ok {
			return mm.State()
		}
		return fmt.Sprintf("%s ticket %d epoch %d", mm.State(), t, e)
	}
	setup := sc.Setup
	sc.Setup = func(r *sim.Run[Msg]) {
		setup(r)
		s := r.Sim
		epochs := NewEpochChecker()
		s.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
			if e, ok := ev.(TakenEvent); ok {
				return epochs.Observe(id, e)
			}
			return nil
		}
		s.Invariant = func() error {
			live := map[node.ID]*Machine{}
			for id, m := range ms {
				if s.Alive(id) {
					live[id] = m.Machine()
					stateFile[id] = max(stateFile[id], m.mark()) // ticketd writes the mark
				}
			}
			return DisjointActing(live, func(id node.ID) bool { return live[id].MayAct(s.LocalNow(id)) })
		}
	}
	sc.Commands = maps.Clone(sc.Commands)
	sc.Commands["join"] = func(r *sim.Run[Msg], args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("usage: join N")
		}
		id, err := r.ID(args[0])
		if err != nil {
			return err
		}
		if err := r.Inject(id, Msg{Type: MsgGroup, Group: r.Sim.IDs()}); err != nil {
			return err
		}
		if err := r.Inject(id, Msg{Type: MsgLocal, Local: &Local{Durable: true, N: uint32(len(r.Sim.IDs()) + 1)}}); err != nil {
			return err
		}
		return r.Inject(id, Msg{Type: MsgJoin})
	}
	return sc
}

// scenarioFor is the scenario a transcript plays: refound-*.txt with
// members, stretch-*.txt with bare Machines under the largest
// Config.Stretch, the others with bare Machines.
func scenarioFor(path string, b bug) *sim.Scenario[Msg] {
	switch base := filepath.Base(path); {
	case strings.HasPrefix(base, "refound-"):
		return members(b)
	case strings.HasPrefix(base, "stretch-"):
		return transcript(b, maxStretch)
	}
	return transcript(b, 0)
}

// TestScenarioTranscripts plays testdata/*.txt.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), func(path string, rewrite bool) (string, string, error) {
		return scenarioFor(path, 0).RunFile(path, rewrite)
	})
}

// TestScenarioPlantedBugs: the planted bugs of package ticket change the
// transcript that exercises them (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	scenariotest.CatchPlanted(t, func(path string, b bug) (string, string, error) {
		return scenarioFor(path, b).RunFile(path, false)
	}, []scenariotest.Bug[bug]{
		// The temporary coordinator reclaims 3's ticket after one round,
		// not after the wait of §4.
		{Name: "bugShortTemp", File: "exclusion.txt", Plant: bugShortTemp, Shows: "+706ms 4: reclaimed 4..1"},
		{Name: "bugKeepSucc", File: "exclusion.txt", Plant: bugKeepSucc, Shows: "ticket 5 is in the ranges of both 1 (coordinator) and 4 (linking)"},
		// 1 serves 2's CJOIN that it must refuse (reject, then 2 asks 4).
		{Name: "bugServeWhileTemp", File: "exclusion.txt", Plant: bugServeWhileTemp, Shows: "+40.657217ms 1->2 ackcjoin ticket=6"},
		// The voters go on vouching for 3, so 3 keeps acting.
		{Name: "bugNoBan", File: "exclusion-partial-cut.txt", Plant: bugNoBan, Shows: "ticket 0 is in the ranges of both 2 (coordinator) and 3 (coordinator)"},
		// 1 serves the CLEAVE of 2, which is no longer its successor.
		{Name: "bugCleaveFromAnyone", File: "cleave-stale-pred.txt", Plant: bugCleaveFromAnyone, Shows: "ticket 6 is in the ranges of both 1 (coordinator) and 3 (linking)"},
		// The refounded pool starts from epoch 0: 1 takes epoch 1 again.
		{Name: "bugFloorZero", File: "refound-pool-ends.txt", Plant: bugFloorZero, Shows: "process 1 took ticket 3 with epoch 1, which 1 had already used"},
		// 1 founds a second pool without 2's and 3's answers.
		{Name: "bugRefoundSilent", File: "refound-cut-off.txt", Plant: bugRefoundSilent, Shows: "ticket 2 is in the ranges of both 1 (coordinator) and 2 (coordinator)"},
		// 4 waits out one window, not eight, and reclaims while 3 acts.
		{Name: "bugNoStretchWait", File: "stretch-cut-off-stalls.txt", Plant: bugNoStretchWait, Shows: "ticket 1 is in the ranges of both 3 (coordinator) and 4 (coordinator)"},
	})
}
