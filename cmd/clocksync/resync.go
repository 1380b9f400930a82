package main

import (
	"log/slog"
	"math"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/clocksync"
)

func maxSkewFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: "max-skew", Usage: "with --upstream: poll at least every max-skew/(4ρ), ρ being |--drift-ppm| or else 500 ppm: Tanenbaum's δ/(2ρ), halved because each poll slews away half the offset; keeps this clock within max-skew/2 of the upstream and any two such servers within max-skew"}
}

// servePoll is serve's upstream polling interval: --poll, shortened to
// δ/(4ρ) when --max-skew δ is given (clocksync.SlewedResyncInterval).
func servePoll(c *ucli.Context, log *slog.Logger) (time.Duration, error) {
	poll := c.Duration("poll")
	if !c.IsSet("max-skew") {
		return poll, nil
	}
	if c.String("upstream") == "" {
		return 0, cli.Exitf(cli.ExitUsage, "--max-skew goes with --upstream")
	}
	every, err := clocksync.SlewedResyncInterval(c.Duration("max-skew"), math.Abs(c.Float64("drift-ppm")))
	if err != nil {
		return 0, cli.Exitf(cli.ExitUsage, "--max-skew: %v", err)
	}
	if every < 10*time.Millisecond {
		return 0, cli.Exitf(cli.ExitUsage, "--max-skew %v needs a poll every %v: below 10ms, the network cannot keep that bound", c.Duration("max-skew"), every)
	}
	if every < poll {
		log.Info("polling faster to keep the skew bound", "max_skew", c.Duration("max-skew"), "poll", every)
		poll = every
	}
	return poll, nil
}
