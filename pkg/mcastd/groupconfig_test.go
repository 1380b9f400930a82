package mcastd

import (
	"bytes"
	"errors"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestNewGroupConfig: the typed options become the machine's
// configuration: contacts (every other peer, or --join's), StartWith
// (every peer unless set), a founding delay by rank, and bad --join
// members refused.
func TestNewGroupConfig(t *testing.T) {
	peers := []node.ID{1, 2, 3}
	cfg, err := NewGroupConfig(2, 7, peers, GroupOptions{Total: group.TotalTotem, StartWith: -1, Period: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ID != 2 || cfg.Inc != 7 || !slices.Equal(cfg.Contacts, []node.ID{1, 3}) || cfg.StartWith != 3 || cfg.Total != group.TotalTotem {
		t.Errorf("config %+v", cfg)
	}
	if want := 6 * cfg.SuspectTime(); cfg.FoundAfter != want || cfg.SuspectTime() != 80*time.Millisecond {
		t.Errorf("found after %v (suspect %v), want %v", cfg.FoundAfter, cfg.SuspectTime(), want)
	}
	cfg, err = NewGroupConfig(1, 1, peers, GroupOptions{Join: []node.ID{3}, StartWith: 0, Found: true, EVS: true, Safe: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Contacts, []node.ID{3}) || cfg.StartWith != 0 || !cfg.Found || cfg.FoundAfter != 0 || !cfg.EVS || !cfg.Safe {
		t.Errorf("config %+v", cfg)
	}
	for _, join := range [][]node.ID{{1}, {4}} {
		if _, err := NewGroupConfig(1, 1, peers, GroupOptions{Join: join}); err == nil || !strings.Contains(err.Error(), "--join") {
			t.Errorf("--join %v: %v", join, err)
		}
	}
	if _, err := NewGroupConfig(4, 1, peers, GroupOptions{}); err == nil {
		t.Error("a member not among the peers accepted")
	}
}

// lostFake is a member the group went on without, with messages lost.
type lostFake struct {
	fake
	g *Group
}

func (f *lostFake) Handle(ev node.Event, p *Printer) {
	f.g.Handle(ev, p)
	f.fake.Handle(ev, p)
}
func (f *lostFake) Lost() error { return f.g.Lost() }

// TestPipeLostIsAnError: a member removed with messages the others may
// lack prints a 'lost' line with their numbers and, once the group has
// finished, exits 76 saying so instead of 0.
func TestPipeLostIsAnError(t *testing.T) {
	live, evs := running()
	var out bytes.Buffer
	p := NewPrinter(&out, 3, true, false)
	f := &lostFake{g: &Group{}}
	evs <- group.LostEvent{Event: "lost", View: 4, Inc: 2, Seqs: []uint64{7, 8}}
	evs <- mcast.DoneEvent{}
	err := Pipe(live, f, strings.NewReader(""), p, PipeConfig{MaxLine: mcast.MaxPayload, Linger: time.Minute})
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != cli.ExitLost || !strings.Contains(err.Error(), "2 of its messages") {
		t.Fatalf("pipe ended with %v, want exit 76 saying 2 messages may be lost", err)
	}
	if !strings.Contains(out.String(), `"event":"lost","member":3,"view":4,"inc":2,"seqs":[7,8]`) {
		t.Errorf("output:\n%s", out.String())
	}
	if (&Group{}).Lost() != nil {
		t.Error("a member that lost nothing reports a loss")
	}
}
