package mcastd

import (
	"bytes"
	"errors"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mcast"
)

// TestPipeMissedIsAnError: a member removed having missed messages of its
// view that the members that stay delivered prints a 'missed' line per
// sender with their numbers (or, without the view's cut, one saying so)
// and, once the group has finished, exits 76 instead of 0: what a script
// sees besides the 'removed' line.
func TestPipeMissedIsAnError(t *testing.T) {
	for _, c := range []struct {
		ev       group.MissedEvent
		json, is string
	}{
		{group.MissedEvent{Event: "missed", View: 4, Sender: 2, Inc: 1, Seqs: []uint64{7, 8}},
			`"event":"missed","member":3,"view":4,"inc":1,"sender":2,"seqs":[7,8]}`, "missed 2 messages"},
		{group.MissedEvent{Event: "missed", View: 4, Unknown: true},
			`"event":"missed","member":3,"view":4,"unknown":true}`, "cut is unknown"},
	} {
		live, evs := running()
		var out bytes.Buffer
		p := NewPrinter(&out, 3, true, false)
		f := &lostFake{g: &Group{}}
		evs <- group.RemovedEvent{Event: "removed", View: 4, Inc: 2}
		evs <- c.ev
		evs <- mcast.DoneEvent{}
		err := Pipe(live, f, strings.NewReader(""), p, PipeConfig{MaxLine: mcast.MaxPayload, Linger: time.Minute})
		var ee *cli.ExitError
		if !errors.As(err, &ee) || ee.Code != cli.ExitLost || !strings.Contains(err.Error(), c.is) {
			t.Fatalf("%v: pipe ended with %v, want exit 76 saying %q", c.ev, err, c.is)
		}
		if !strings.Contains(out.String(), c.json) {
			t.Errorf("%v: output:\n%s", c.ev, out.String())
		}
	}
}
