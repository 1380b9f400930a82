package termination

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/scenariotest"
)

// transcript plays the termination transcripts: every process starts
// active, one backup copy of the marker (k = 1), a 20 ms heartbeat and an
// 80 ms timeout. The checker is the simulator's (sim_test.go): when
// termination is announced, no live process is active and every work
// message sent has been taken exactly once. plant switches a planted bug
// on.
func transcript(plant func(*Config)) *sim.Scenario[Msg] {
	var sent, took map[node.ID]int
	var announced bool
	mach := func(r *sim.Run[Msg], id node.ID) *Machine { return r.Sim.Machine(id).(*Machine) }
	local := func(typ MsgType) func(*sim.Run[Msg], []string) error {
		return func(r *sim.Run[Msg], args []string) error {
			if (typ == MsgSend) != (len(args) == 2) || len(args) < 1 {
				return fmt.Errorf("usage: send N TO, idle N")
			}
			id, err := r.ID(args[0])
			if err != nil {
				return err
			}
			msg := Msg{Type: typ}
			if typ == MsgSend {
				if msg.To, err = r.ID(args[1]); err != nil {
					return err
				}
				sent[msg.To]++
			}
			return r.Inject(id, msg)
		}
	}
	return &sim.Scenario[Msg]{
		Codec: Codec{},
		Machine: func(id node.ID, peers []node.ID, _ int, _ *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: peers, Backups: 1, Active: true,
				Heartbeat: 20 * time.Millisecond, Timeout: 80 * time.Millisecond}
			if plant != nil {
				plant(&cfg)
			}
			m, err := New(cfg)
			if err != nil {
				panic(err)
			}
			return m
		},
		Status: func(_ *sim.Sim[Msg], _ node.ID, nm node.Machine[Msg]) string {
			m := nm.(*Machine)
			s := "passive"
			if m.active {
				s = "active"
			}
			if m.black {
				s += " black"
			} else {
				s += " white"
			}
			if m.holding {
				s += fmt.Sprintf(" holding streak=%v", m.streak)
			}
			if m.done {
				s += " terminated"
			}
			return s
		},
		Setup: func(r *sim.Run[Msg]) {
			sent, took, announced = map[node.ID]int{}, map[node.ID]int{}, false
			r.Sim.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
				switch ev.(type) {
				case WorkEvent:
					took[id]++
					if took[id] > sent[id] {
						return fmt.Errorf("process %d took %d work messages, %d were sent to it", id, took[id], sent[id])
					}
				case TerminatedEvent:
					if announced {
						return nil
					}
					announced = true
					for _, p := range r.Sim.IDs() {
						if !r.Sim.Alive(p) {
							continue
						}
						if mach(r, p).Active() {
							return fmt.Errorf("process %d announced termination while process %d is active", id, p)
						}
						if took[p] != sent[p] {
							return fmt.Errorf("process %d announced termination with %d work messages on their way to process %d", id, sent[p]-took[p], p)
						}
					}
				}
				return nil
			}
		},
		Commands: map[string]func(*sim.Run[Msg], []string) error{
			// send N TO: active process N sends work to process TO.
			"send": local(MsgSend),
			// idle N: process N has finished its work (passive).
			"idle": local(MsgIdle),
		},
	}
}

// TestScenarioTranscripts plays testdata/*.txt.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), transcript(nil).RunFile)
}

// TestScenarioPlantedBugs: the planted bugs of package termination change
// the transcript that exercises them (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	scenariotest.CatchPlanted(t, scenariotest.Plant(transcript), []scenariotest.Bug[func(*Config)]{
		{Name: "noColour", File: "work-behind-marker.txt", Plant: func(c *Config) { c.bug = bugNoColour }, Shows: "failed:"},
		{Name: "actOnDup", File: "work-ack-lost.txt", Plant: func(c *Config) { c.bug = bugActOnDup }, Shows: "failed:"},
	})
}
