package clockd

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/clocksync"
)

// Reading is one look at how far this host's clock may be from the time
// it follows.
type Reading struct {
	Bound time.Duration // the worst error the reading allows; meaningful when OK
	OK    bool          // the source is synchronised (every member answered)
	Why   string        // when not OK: what is missing
	Quiet bool          // nothing answered this look (Why says so)
	Text  string        // the reading, for the progress line
}

// WaitConfig is what `clocksync wait` is told by its flags.
type WaitConfig struct {
	MaxOffset time.Duration // done once a reading's Bound is within this
	Timeout   time.Duration // give up (75) after this
	Every     time.Duration // look this often
	Probe     func(wait time.Duration) Reading
	Progress  io.Writer // one line a second while waiting
}

// Wait probes until a reading is synchronised and within MaxOffset (nil),
// or Timeout passes (75), printing progress once a second.
func Wait(cfg WaitConfig) error {
	if cfg.MaxOffset <= 0 || cfg.Timeout <= 0 {
		return cli.Exitf(cli.ExitUsage, "--max-offset and --timeout must be > 0")
	}
	if cfg.Every <= 0 {
		cfg.Every = 200 * time.Millisecond
	}
	start := time.Now()
	deadline := start.Add(cfg.Timeout)
	nextSay := start.Add(time.Second)
	var last, heard Reading // heard: the last look something answered
	for {
		last = cfg.Probe(min(cfg.Every, max(time.Until(deadline), time.Millisecond)))
		if !last.Quiet || heard.Text == "" && heard.Why == "" {
			heard = last
		}
		if last.OK && last.Bound <= cfg.MaxOffset {
			fmt.Fprintf(cfg.Progress, "clocksync: within %v after %v: %s\n", cfg.MaxOffset, time.Since(start).Round(time.Millisecond), last.Text)
			return nil
		}
		now := time.Now()
		if !now.Before(deadline) {
			// The last look may have had only what was left of the
			// timeout to wait for an answer: name what was last heard.
			return cli.Exitf(cli.ExitBusy, "not within %v after %v: %s", cfg.MaxOffset, cfg.Timeout, heard.describe())
		}
		if !now.Before(nextSay) {
			fmt.Fprintf(cfg.Progress, "clocksync: waiting %v of %v: %s\n", now.Sub(start).Round(time.Second), cfg.Timeout, last.describe())
			for !now.Before(nextSay) {
				nextSay = nextSay.Add(time.Second)
			}
		}
		time.Sleep(min(cfg.Every, time.Until(deadline))) // the polling interval
	}
}

func (r Reading) describe() string {
	if !r.OK {
		return r.Why
	}
	return r.Text
}

// ProbeServer is a Probe of the NTP server at target: synchronised when it
// answers with a stratum of 1 to 15 and no alarm, its bound |θ| plus the
// root distance λ: the true offset lies within θ ± λ (RFC 5905 §10, the
// correctness interval).
func ProbeServer(target string) (func(wait time.Duration) Reading, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		target = net.JoinHostPort(target, "123")
	}
	if _, err := net.ResolveUDPAddr("udp", target); err != nil {
		return nil, cli.Exitf(cli.ExitUsage, "--server: %v", err)
	}
	return func(wait time.Duration) Reading {
		conn, err := net.Dial("udp", target)
		if err != nil {
			return Reading{Why: err.Error()}
		}
		defer conn.Close()
		rep, s, ok := exchange(conn, time.Now, wait)
		if !ok {
			return Reading{Why: "no answer from " + target, Quiet: true}
		}
		if rep.Leap == clocksync.LeapAlarm || rep.Stratum < 1 || rep.Stratum > 15 {
			return Reading{Why: fmt.Sprintf("%s is not synchronised (stratum %d)", target, rep.Stratum)}
		}
		dist := rep.RootDelay/2 + rep.RootDisp + s.Delay()/2
		bound := absDur(s.Offset()) + dist
		return Reading{OK: true, Bound: bound,
			Text: fmt.Sprintf("server %s stratum %d offset %+.6fs root-distance %.6fs bound %.6fs",
				target, rep.Stratum, s.Offset().Seconds(), dist.Seconds(), bound.Seconds())}
	}, nil
}
