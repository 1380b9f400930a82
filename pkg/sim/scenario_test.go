package sim_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/scenariotest"
)

// relay passes a hop count around the ring of peers: a node handed h > 0
// reports it and passes h−1 to its successor. A local request starts a
// relay. Every 100ms of quiet it reports that it is idle.
type relay struct {
	id    node.ID
	peers []node.ID
	inc   int
	got   int
	idle  time.Time
	out   []node.Envelope[uint64]
	evs   []node.Event
}

type note string

func (n note) Kind() string   { return "note" }
func (n note) String() string { return string(n) }

func (r *relay) next() node.ID {
	for i, p := range r.peers {
		if p == r.id {
			return r.peers[(i+1)%len(r.peers)]
		}
	}
	return r.id
}

func (r *relay) Step(now time.Time, in node.Envelope[uint64]) error {
	if in.Msg > 1000 {
		return fmt.Errorf("hop count %d out of range", in.Msg)
	}
	if in.From != r.id {
		r.got++
		r.evs = append(r.evs, note(fmt.Sprintf("got %d from %d", in.Msg, in.From)))
		if in.Msg == 0 {
			return nil
		}
		in.Msg--
	}
	r.out = append(r.out, node.Envelope[uint64]{From: r.id, To: r.next(), Msg: in.Msg})
	r.idle = now.Add(100 * time.Millisecond)
	return nil
}

func (r *relay) Tick(now time.Time) {
	if !r.idle.IsZero() && !now.Before(r.idle) {
		r.evs = append(r.evs, note("idle"))
		r.idle = time.Time{}
	}
}

func (r *relay) Ready() node.Ready[uint64] {
	rd := node.Ready[uint64]{Msgs: r.out, Events: r.evs, Wake: r.idle}
	r.out, r.evs = nil, nil
	return rd
}

func relayScenario() *sim.Scenario[uint64] {
	return &sim.Scenario[uint64]{
		Codec: u64codec{},
		Machine: func(id node.ID, peers []node.ID, inc int, _ *rand.Rand) node.Machine[uint64] {
			return &relay{id: id, peers: peers, inc: inc}
		},
		Format: func(h uint64) string { return fmt.Sprintf("hop h=%d", h) },
		Status: func(_ *sim.Sim[uint64], _ node.ID, m node.Machine[uint64]) string {
			r := m.(*relay)
			return fmt.Sprintf("incarnation=%d got=%d peers=%v", r.inc, r.got, r.peers)
		},
		Commands: map[string]func(r *sim.Run[uint64], args []string) error{
			// start N H: node N starts a relay of H hops.
			"start": func(r *sim.Run[uint64], args []string) error {
				if len(args) != 2 {
					return fmt.Errorf("usage: start N HOPS")
				}
				id, err := r.ID(args[0])
				if err != nil {
					return err
				}
				h, err := strconv.ParseUint(args[1], 10, 64)
				if err != nil {
					return fmt.Errorf("hops: %v", err)
				}
				return r.Inject(id, h)
			},
		},
	}
}

// TestScenarioTranscripts plays testdata/*.txt, the runner's own
// transcripts, which use every built-in command.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), relayScenario().RunFile)
}

// TestScenarioCatchesMismatch proves a transcript fails when the output
// changes, and that -rewrite writes the output back.
func TestScenarioCatchesMismatch(t *testing.T) {
	text := "# a relay of two hops\nadd 3\n----\n+0s 1: boot 1\n+0s 2: boot 1\n+0s 3: boot 1\n\nstart 1 2\n----\n\nstep-until-quiet\n----\n+1ms 1->2 hop h=2\n+1ms 2: got 2 from 1\n+2ms 2->3 hop h=1\n+2ms 3: got 1 from 2\n+3ms 3->1 hop h=0\n+3ms 1: WRONG\n"
	path := filepath.Join(t.TempDir(), "x.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := relayScenario()
	got, want, err := sc.RunFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	d := sim.Diff(want, got)
	if !strings.Contains(d, "- +3ms 1: WRONG") || !strings.Contains(d, "+ +3ms 1: got 0 from 3") {
		t.Fatalf("diff does not show the changed line:\n%s", d)
	}
	if _, _, err := sc.RunFile(path, true); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != got {
		t.Fatalf("-rewrite wrote\n%s\nwant\n%s", b, got)
	}
	if got2, want2, _ := sc.RunFile(path, false); got2 != want2 {
		t.Fatalf("a rewritten transcript does not pass:\n%s", sim.Diff(want2, got2))
	}
}

// TestScenarioErrors: a malformed file and an unknown command are errors
// of the test; a command's bad arguments are its output.
func TestScenarioErrors(t *testing.T) {
	sc := relayScenario()
	for _, c := range []struct{ text, err string }{
		{"add 3\nstatus\n", `line 1: "add 3" is not followed by a line "----"`},
		{"add 3\n----\n\nfly 2\n----\n", `4: unknown command "fly"`},
	} {
		if _, err := sc.Play(c.text); err == nil || err.Error() != c.err {
			t.Errorf("%q: err %v, want %s", c.text, err, c.err)
		}
	}
	got, err := sc.Play("tick 5ms\n----\n\nadd 0\n----\n\nadd 2\n----\n\ncrash 3\n----\n\ndeliver 1-2\n----\n\ntick soon\n----\n\ncut 1\n----\n\nstart 1 x\n----\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"tick 5ms\n----\nerror: no nodes yet (add N first)\n",
		"add 0\n----\nerror: add wants a count from 1 to 1000, not \"0\"\n",
		"crash 3\n----\nerror: no node 3\n",
		"deliver 1-2\n----\nerror: \"1-2\" is not a link (A->B)\n",
		"tick soon\n----\nerror: tick wants a duration such as 50ms, not \"soon\"\n",
		"cut 1\n----\nerror: cut wants groups separated by /, such as 1,2/3\n",
		"start 1 x\n----\nerror: hops: strconv.ParseUint: parsing \"x\": invalid syntax\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

// TestScenarioParseRoundTrip: formatting what was parsed gives the file back.
func TestScenarioParseRoundTrip(t *testing.T) {
	text := "# one\n\n# two\nadd 1\n----\n+0s 1: boot 1\n\nstatus\n----\n+0s 1: up\n\n# trailing\n"
	blocks, trailer, err := sim.ParseTranscript(text)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]string, len(blocks))
	for i, b := range blocks {
		got[i] = b.Want
	}
	if out := sim.FormatTranscript(blocks, got, trailer); out != text {
		t.Fatalf("round trip:\n%s\nwant\n%s", out, text)
	}
}
