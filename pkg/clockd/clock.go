package clockd

import (
	"net"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/clock"
	"github.com/roundtable-go/roundtable/pkg/clocksync"
)

// localClock is what a serve node disciplines: by default a virtual clock
// (the system clock, optionally made wrong with --skew/--drift-ppm, then
// disciplined in memory), or with --apply the system clock itself,
// through the kernel. Callers hold the server's lock.
type localClock interface {
	// At maps a system clock reading to this node's time.
	At(sys time.Time) time.Time
	// Update takes, at system time sys, how far the upstream is ahead.
	Update(sys time.Time, offset time.Duration) error
	// Status reports the correction in progress.
	Status() clockStatus
}

type clockStatus struct {
	FreqPPM     float64 `json:"freq_ppm"`
	Pending     float64 `json:"pending_s"`
	SystemClock bool    `json:"system_clock"`
}

type virtualClock struct {
	raw clock.Skewed
	d   clocksync.Discipline
	sys time.Time // the last reading, for Status
}

func (v *virtualClock) At(sys time.Time) time.Time {
	v.sys = sys
	return v.d.Now(v.raw.At(sys))
}

func (v *virtualClock) Update(sys time.Time, offset time.Duration) error {
	v.sys = sys
	v.d.Update(v.raw.At(sys), offset)
	return nil
}

func (v *virtualClock) Status() clockStatus {
	return clockStatus{FreqPPM: v.d.FrequencyPPM(), Pending: v.d.Pending(v.raw.At(v.sys)).Seconds()}
}

// NowReport is what a serve node's control socket answers: one JSON line
// per connection.
type NowReport struct {
	Event    string  `json:"event"`
	Time     string  `json:"time"`
	System   string  `json:"system"`
	Offset   float64 `json:"offset_s"` // this node's time minus the system clock
	Synced   bool    `json:"synced"`
	Stratum  uint8   `json:"stratum"`
	Upstream string  `json:"upstream,omitempty"`
	clockStatus
}

func (n *server) report() NowReport {
	n.mu.Lock()
	defer n.mu.Unlock()
	sys := time.Now()
	t := n.clk.At(sys)
	r := NowReport{Event: "now", Time: t.UTC().Format(time.RFC3339Nano), System: sys.UTC().Format(time.RFC3339Nano),
		Offset: t.Sub(sys).Seconds(), Synced: n.srv.Synced, Stratum: n.srv.Stratum, Upstream: n.upstream,
		clockStatus: n.clk.Status()}
	if !r.Synced {
		r.Stratum = 16
	}
	return r
}

// control answers each connection on the control socket with the node's
// current time and correction, then closes it.
func (n *server) control(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		cn := cli.NewConn(c)
		_ = cn.Send(n.report())
		cn.Close()
	}
}
