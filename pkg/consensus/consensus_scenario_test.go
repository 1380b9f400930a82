package consensus

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/scenariotest"
)

// transcript plays the consensus transcripts: FloodSet with n = 4, f = 1,
// inputs 3, 5, 1 and 7, round 1 starting 10ms into the run on a shared
// clock (no start barrier); a checker of agreement among the deciders is
// installed (the transcripts say which processes crash). plant switches
// a planted bug on.
func transcript(plant func(*Config)) *sim.Scenario[Msg] {
	inputs := map[node.ID]string{1: "3", 2: "5", 3: "1", 4: "7"}
	return &sim.Scenario[Msg]{
		Codec:   Codec{},
		Options: sim.Options{Start: epoch},
		Machine: func(id node.ID, peers []node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: peers, Algo: FloodSet, F: 1, Value: inputs[id], Start: epoch.Add(10 * time.Millisecond), Rand: rng}
			if plant != nil {
				plant(&cfg)
			}
			m, err := New(cfg)
			if err != nil {
				panic(err)
			}
			return m
		},
		Format: func(m Msg) string {
			if m.Hello {
				return fmt.Sprintf("hello ready=%v", m.Ready)
			}
			var w []string
			for _, e := range m.Entries {
				w = append(w, e.Value)
			}
			return fmt.Sprintf("round %d W={%s}", m.Round, strings.Join(w, ","))
		},
		Setup: func(r *sim.Run[Msg]) {
			decided := map[node.ID]string{}
			r.Sim.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
				d, ok := ev.(DecideEvent)
				if !ok {
					return nil
				}
				for other, v := range decided {
					if v != d.Value {
						return fmt.Errorf("agreement: %d decided %s, %d decided %s", other, v, id, d.Value)
					}
				}
				decided[id] = d.Value
				return nil
			}
		},
	}
}

// signedTranscript plays the signed-* transcripts: Lamport, Shostak and
// Pease's signed messages with n = 3, f = 1, the three generals' inputs
// (1 attack, 2 retreat, 3 attack; silence and ties: retreat), round 1
// starting 10ms into the run. Process 3 is a traitor (forger below): it
// runs the algorithm and also sends what the transcript's forge commands
// tell it to. Messages are written "round 2 {attack by 1,3}": the value
// and its chain of signers, a signer marked ! when its signature does not
// verify. A loyal process's decision shows its vector and how many
// entries it rejected as forged. The checker: every loyal decider holds
// each loyal process's input in its vector (nobody forged a value in a
// loyal name), and the loyal deciders agree on the vector and the value.
func signedTranscript(plant func(*Config)) *sim.Scenario[Msg] {
	ids := []node.ID{1, 2, 3}
	inputs := map[node.ID]string{1: "attack", 2: "retreat", 3: "attack"}
	const traitorID, session = node.ID(3), "three generals"
	priv, pub := testKeys(rand.New(rand.NewPCG(3, 3)), ids)
	format := func(m Msg) string {
		var w []string
		for _, e := range m.Signed {
			var by []string
			for k, s := range e.Chain {
				mark := ""
				if !ed25519.Verify(pub[s.ID], signedBytes(session, e.Value, chainIDs(e.Chain)[:k+1]), s.Sig) {
					mark = "!"
				}
				by = append(by, fmt.Sprintf("%d%s", s.ID, mark))
			}
			w = append(w, fmt.Sprintf("{%s by %s}", e.Value, strings.Join(by, ",")))
		}
		return fmt.Sprintf("round %d %s", m.Round, strings.Join(w, " "))
	}
	return &sim.Scenario[Msg]{
		Codec:   Codec{},
		Options: sim.Options{Start: epoch},
		Machine: func(id node.ID, peers []node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: peers, Algo: Signed, F: 1, Value: inputs[id], Default: "retreat",
				Start: epoch.Add(10 * time.Millisecond), Rand: rng, Key: priv[id], Keys: pub, Session: session}
			if plant != nil && id != traitorID {
				plant(&cfg)
			}
			m, err := New(cfg)
			if err != nil {
				panic(err)
			}
			if id == traitorID {
				return &forger{Machine: m, forged: map[node.ID][]SignedEntry{}}
			}
			return m
		},
		Format: format,
		Event: func(ev node.Event) string {
			if d, ok := ev.(DecideEvent); ok {
				return fmt.Sprintf("%v vector %s forged %d", d, strings.Join(d.Vector, ","), d.Forged)
			}
			return ev.String()
		},
		Setup: func(r *sim.Run[Msg]) {
			vectors := map[node.ID][]string{}
			r.Sim.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
				d, ok := ev.(DecideEvent)
				if !ok || id == traitorID {
					return nil
				}
				for j, p := range ids {
					if p != traitorID && d.Vector[j] != inputs[p] {
						return fmt.Errorf("process %d holds %s for loyal process %d, whose input is %s", id, d.Vector[j], p, inputs[p])
					}
				}
				for other, v := range vectors {
					if !slices.Equal(v, d.Vector) {
						return fmt.Errorf("vector agreement: %d has %s, %d has %s", other, strings.Join(v, ","), id, strings.Join(d.Vector, ","))
					}
				}
				vectors[id] = d.Vector
				return nil
			}
		},
		Commands: map[string]func(*sim.Run[Msg], []string) error{
			// forge A->B VALUE SIGNERS: traitor A adds to its message to
			// B of round len(SIGNERS) the value under a chain of those
			// signers (1,3), every signature made with A's own key: good
			// in A's slots, forged in the others'.
			"forge": func(r *sim.Run[Msg], args []string) error {
				if len(args) != 3 {
					return fmt.Errorf("usage: forge A->B VALUE SIGNERS")
				}
				from, to, err := r.Link(args[0])
				if err != nil {
					return err
				}
				if from == node.None || to == node.None {
					return fmt.Errorf("forge wants two processes, not %q", args[0])
				}
				t, ok := r.Sim.Machine(from).(*forger)
				if !ok {
					return fmt.Errorf("process %d is loyal: it forges nothing", from)
				}
				e := SignedEntry{Value: args[1]}
				var signers []node.ID
				for _, f := range strings.Split(args[2], ",") {
					id, err := r.ID(f)
					if err != nil {
						return err
					}
					signers = append(signers, id)
					e.Chain = append(e.Chain, Sig{ID: id, Sig: ed25519.Sign(priv[from], signedBytes(session, e.Value, signers))})
				}
				t.forged[to] = append(t.forged[to], e)
				return nil
			},
		},
	}
}

// forger is a signed-messages process that also sends forgeries: each
// entry in forged[p] goes with its round's message to p (the round is
// the chain's length). It reports no decision of its own.
type forger struct {
	*Machine
	forged map[node.ID][]SignedEntry
}

func (t *forger) Ready() node.Ready[Msg] {
	rd := t.Machine.Ready()
	for i, env := range rd.Msgs {
		var keep []SignedEntry
		for _, e := range t.forged[env.To] {
			if len(e.Chain) == int(env.Msg.Round) {
				rd.Msgs[i].Msg.Signed = append(slices.Clone(env.Msg.Signed), e)
			} else {
				keep = append(keep, e)
			}
		}
		t.forged[env.To] = keep
	}
	for i, ev := range rd.Events {
		if d, ok := ev.(DecideEvent); ok {
			rd.Events[i] = ByzantineEvent{Event: "byzantine", Strategy: "forger", Round: d.Round, Messages: d.Messages}
		}
	}
	return rd
}

// playFile plays one transcript; the file's name picks the algorithm.
func playFile(path string, plant func(*Config), rewrite bool) (got, want string, err error) {
	if strings.HasPrefix(filepath.Base(path), "signed-") {
		return signedTranscript(plant).RunFile(path, rewrite)
	}
	return transcript(plant).RunFile(path, rewrite)
}

// TestScenarioTranscripts plays testdata/*.txt.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), func(path string, rewrite bool) (string, string, error) {
		return playFile(path, nil, rewrite)
	})
}

// TestScenarioPlantedBugs: the planted bugs of FloodSet and of signed
// messages change the transcript that exercises them (docs/testing.md
// lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	play := func(path string, plant func(*Config)) (string, string, error) { return playFile(path, plant, false) }
	scenariotest.CatchPlanted(t, play, []scenariotest.Bug[func(*Config)]{
		{Name: "rounds = f", File: "floodset-crash-mid-round.txt", Plant: func(c *Config) { c.rounds = c.F }, Shows: "agreement"},
		{Name: "bugIgnoreMissed", File: "floodset-cut-off.txt", Plant: func(c *Config) { c.bug = bugIgnoreMissed }, Shows: "1: decide 3"},
		{Name: "bugOneBadSignature", File: "signed-forgeries.txt", Plant: func(c *Config) { c.bug = bugOneBadSignature }, Shows: "holds retreat for loyal process 1"},
		{Name: "bugRepeatSigner", File: "signed-forgeries.txt", Plant: func(c *Config) { c.bug = bugRepeatSigner }, Shows: "vector agreement: 2 has attack,retreat,attack, 1 has attack,retreat,retreat"},
	})
}
