package clockd

import (
	"fmt"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// NowSocket prints the report of the serve node whose control socket is
// path, waiting at most wait.
func NowSocket(path string, wait time.Duration, out *cli.Output) error {
	conn, err := cli.DialControl("clocksync", path)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(wait))
	var r NowReport
	if err := conn.Next(&r); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "%s: %v", path, err)
	}
	if out.IsJSON() {
		out.JSON(r)
	} else {
		state := "synced"
		if !r.Synced {
			state = "unsynced"
		}
		clk := "virtual"
		if r.SystemClock {
			clk = "system"
		}
		out.Line(fmt.Sprintf("now %s offset %+.6fs %s stratum %d freq %+.3fppm pending %+.6fs clock %s",
			r.Time, r.Offset, state, r.Stratum, r.FreqPPM, r.Pending, clk))
	}
	return nil
}
