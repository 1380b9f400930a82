package ticket

import (
	"fmt"
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
// may act) are checked after every step. bug switches a planted bug on.
func transcript(bug bug) *sim.Scenario[Msg] {
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
				Retry: 20 * time.Millisecond, bug: bug}
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
			m.Attempt = 0 // drawn at random: it says nothing here
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
		},
	}
}

// TestScenarioTranscripts plays testdata/*.txt.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), transcript(0).RunFile)
}

// TestScenarioPlantedBugs: the planted bugs of package ticket change the
// transcript that exercises them (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	scenariotest.CatchPlanted(t, scenariotest.Plant(transcript), []scenariotest.Bug[bug]{
		// The temporary coordinator reclaims 3's ticket after one round,
		// not after the wait of §4.
		{Name: "bugShortTemp", File: "exclusion.txt", Plant: bugShortTemp, Shows: "+736.724009ms 2: reclaimed 1..0"},
		{Name: "bugKeepSucc", File: "exclusion.txt", Plant: bugKeepSucc, Shows: "ticket 5 is in the ranges of both 1 (coordinator) and 4 (linking)"},
		// 1 serves 2's CJOIN that it must refuse (reject, then 2 asks 4).
		{Name: "bugServeWhileTemp", File: "exclusion.txt", Plant: bugServeWhileTemp, Shows: "+40.657217ms 1->2 ackcjoin ticket=6"},
		// The voters go on vouching for 3, so 3 keeps acting.
		{Name: "bugNoBan", File: "exclusion-partial-cut.txt", Plant: bugNoBan, Shows: "ticket 1 is in the ranges of both 2 (coordinator) and 3 (coordinator)"},
	})
}
