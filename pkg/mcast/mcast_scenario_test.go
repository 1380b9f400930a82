package mcast

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

// sendCommand is "send N PAYLOAD...": member N multicasts each PAYLOAD,
// in the request msg builds.
func sendCommand[M any](msg func([]Item) M) func(*sim.Run[M], []string) error {
	return func(r *sim.Run[M], args []string) error {
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
		return r.Inject(id, msg(items))
	}
}

// groupConfig is the group of a transcript, from its file's name:
// isis-* (ISIS total order), totem-* (TOTEM with safe delivery), safe-*
// (safe delivery, no total order), seq-* (the fixed sequencer), lamport-*
// (Lamport total order), evs-* (extended virtual synchrony), window-*
// (FIFO with a Window of 128 messages); anything else FIFO per sender.
// fixed plays the transcripts of the fixed group (fifo-*, causal-*):
// members 1..n from the start, the order from the file's name. "check"
// judges the logs (Check: integrity, the order, agreement among the
// members up).
func fixed(order Order, b bug) *sim.Scenario[Msg] {
	l := scenariotest.Links{}
	logs := map[node.ID][]Record{}
	var failed error
	return &sim.Scenario[Msg]{
		Codec:   Codec{},
		Options: sim.Options{Latency: l.Latency},
		Machine: func(id node.ID, peers []node.ID, inc int, _ *rand.Rand) node.Machine[Msg] {
			m, err := New(Config{ID: id, Peers: peers, Order: order, bug: b})
			if err != nil {
				panic(err)
			}
			return m
		},
		Event: func(ev node.Event) string {
			if d, ok := ev.(DeliverEvent); ok && d.VT != nil {
				return fmt.Sprintf("%d %d %s vt=%v", d.Sender, d.Seq, d.Payload, d.VT)
			}
			return ev.String()
		},
		Setup: func(r *sim.Run[Msg]) {
			r.Sim.Invariant = func() error { return failed }
			r.Sim.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
				switch e := ev.(type) {
				case SendEvent:
					logs[id] = append(logs[id], Record{Send: true, Seq: e.Seq, Payload: e.Payload})
				case DeliverEvent:
					logs[id] = append(logs[id], Record{Sender: e.Sender, Seq: e.Seq, Payload: e.Payload})
				}
				return nil
			}
		},
		Commands: map[string]func(*sim.Run[Msg], []string) error{
			"send": sendCommand(func(items []Item) Msg { return Msg{Type: MsgSend, Items: items} }),
			"slow": scenariotest.SlowCommand[Msg](l),
			"check": func(r *sim.Run[Msg], args []string) error {
				crashed := map[node.ID]bool{}
				for _, id := range r.Sim.IDs() {
					crashed[id] = !r.Sim.Alive(id)
					if logs[id] == nil {
						logs[id] = []Record{}
					}
				}
				err := Check(order, logs, crashed)
				if v, ok := err.(*Violation); ok {
					err = fmt.Errorf("%s", v.Detail())
				}
				if err == nil {
					r.Printf("check: ok")
				}
				scenariotest.FailNow(r, &failed, err)
				return nil
			},
		},
	}
}

// playFile plays one transcript; the file's name picks the order.
func playFile(file string, b bug, rewrite bool) (got, want string, err error) {
	if strings.HasPrefix(filepath.Base(file), "causal-") {
		return fixed(Causal, b).RunFile(file, rewrite)
	}
	return fixed(FIFO, b).RunFile(file, rewrite)
}

// TestScenarioTranscripts plays testdata/*.txt.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), func(path string, rewrite bool) (string, string, error) {
		return playFile(path, 0, rewrite)
	})
}

// TestScenarioPlantedBugs: the planted bugs of the fixed group change the
// transcript that exercises them (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	play := func(path string, b bug) (string, string, error) { return playFile(path, b, false) }
	scenariotest.CatchPlanted(t, play, []scenariotest.Bug[bug]{
		{Name: "bugEarly", File: "fifo-hold-back.txt", Plant: bugEarly, Shows: "failed: sim seed 0 at +10ms: agreement: member 1 delivered 1/1, member 2 did not"},
		{Name: "bugNoMerge", File: "causal-relay.txt", Plant: bugNoMerge, Shows: "failed: sim seed 0 at +11ms: causal: member 3 delivered 2/1 before 1/1"},
		{Name: "bugNoRelay", File: "causal-relay.txt", Plant: bugNoRelay, Shows: "failed: sim seed 0 at +11ms: agreement: member 2 delivered 1/1, member 3 did not"},
	})
}
