package mcast

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/scenariotest"
)

// transcript plays the group transcripts: member 1 founds the group, the
// others join through everyone; the total order comes from the file's
// name (isis-*, totem-*; safe delivery for totem-*). bug switches a
// planted bug on.
func transcript(total Total, safe bool, bug gbug) *sim.Scenario[GMsg] {
	return &sim.Scenario[GMsg]{
		Codec: GCodec{},
		Machine: func(id node.ID, peers []node.ID, inc int, _ *rand.Rand) node.Machine[GMsg] {
			m, err := NewGroup(GroupConfig{ID: id, Inc: uint64(inc), Found: id == 1 && inc == 1, Contacts: peers,
				Total: total, Safe: safe, bug: bug})
			if err != nil {
				panic(err)
			}
			return m
		},
		Commands: map[string]func(*sim.Run[GMsg], []string) error{
			// send N PAYLOAD...: member N multicasts each PAYLOAD.
			"send": func(r *sim.Run[GMsg], args []string) error {
				if len(args) < 2 {
					return fmt.Errorf("usage: send N PAYLOAD...")
				}
				id, err := r.ID(args[0])
				if err != nil {
					return err
				}
				var items []Item
				for _, p := range args[1:] {
					items = append(items, Item{Payload: []byte(p)})
				}
				return r.Inject(id, GMsg{Type: GSend, Items: items})
			},
		},
	}
}

// playGroup plays one group transcript; the file's name picks the total
// order.
func playGroup(file string, bug gbug, rewrite bool) (got, want string, err error) {
	base := filepath.Base(file)
	total, safe := TotalNone, false
	switch {
	case strings.HasPrefix(base, "isis-"):
		total = TotalISIS
	case strings.HasPrefix(base, "totem-"):
		total, safe = TotalTotem, true
	}
	return transcript(total, safe, bug).RunFile(file, rewrite)
}

// TestScenarioTranscripts plays testdata/*.txt.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), func(path string, rewrite bool) (string, string, error) {
		return playGroup(path, 0, rewrite)
	})
}

// TestScenarioPlantedBugs: the planted bugs of the group protocols change
// the transcript that exercises them (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	play := func(path string, bug gbug) (string, string, error) { return playGroup(path, bug, false) }
	scenariotest.CatchPlanted(t, play, []scenariotest.Bug[gbug]{
		{Name: "gbugISISEarly", File: "isis-flush-cut.txt", Plant: gbugISISEarly, Shows: "+300ms 2: 2 2.1 a"},
		{Name: "gbugTotemStaleAru", File: "totem-lost-token.txt", Plant: gbugTotemStaleAru, Shows: "+441ms 2: 2 2.2 b"}, // delivered while 1 lacks it
	})
}
