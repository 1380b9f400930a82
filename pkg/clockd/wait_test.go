package clockd

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// TestWaitNamesWhatWasHeard: a wait that times out names the last answer
// it had, not the last look, which had only what was left of the timeout
// to wait for one and may have heard nothing.
func TestWaitNamesWhatWasHeard(t *testing.T) {
	for _, c := range []struct {
		name  string
		looks []Reading
		want  string
	}{
		{"answered then quiet", []Reading{{Why: "s is not synchronised (stratum 16)"}, {Why: "no answer from s", Quiet: true}}, "is not synchronised"},
		{"never answered", []Reading{{Why: "no answer from s", Quiet: true}}, "no answer from s"},
		{"answered last", []Reading{{Why: "no answer from s", Quiet: true}, {Why: "s is not synchronised (stratum 16)"}}, "is not synchronised"},
	} {
		n := 0
		err := Wait(WaitConfig{
			MaxOffset: time.Millisecond, Timeout: 30 * time.Millisecond, Every: 5 * time.Millisecond, Progress: io.Discard,
			Probe: func(time.Duration) Reading {
				r := c.looks[min(n, len(c.looks)-1)]
				n++
				return r
			},
		})
		var ee *cli.ExitError
		if !errors.As(err, &ee) || ee.Code != cli.ExitBusy || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want exit 75 naming %q", c.name, err, c.want)
		}
	}
}
