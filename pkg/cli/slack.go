package cli

import (
	"log/slog"
	"os"
	"sync"
	"time"

	ucli "github.com/urfave/cli/v2"
)

// The kill slack. A watchdog kills its command as soon after its deadline
// as the kernel runs it, and on a starved host that is late by the host's
// scheduling delay, which an unprivileged process cannot bound
// (RLIMIT_NICE and RLIMIT_RTPRIO are 0 by default; docs/elect.md gives the
// figures). Where it may, --realtime (sched.go) runs the watchdog under
// SCHED_RR above every normal process, and the delay, so the slack, stays
// near the floor on a busy host (docs/performance.md, "Realtime
// scheduling"); where it may not, or with --realtime=false, the
// measurement below covers it. The deadline handed to a watchdog is not the resource's end
// but the end less a slack: the larger of a floor (--kill-slack) and
// SlackFactor times the worst lateness of the watchdogs' own timers over
// the last SlackWindow. A host that starts to starve its processes
// shortens the lease its commands may use, so that they are stopped early
// rather than late; a command whose usable lease is gone before it starts
// is not started (ErrLeaseOver).
//
// The measurement lives in the watchdog, the process whose wake-up ends
// the command: its own lateness is the quantity to cover, and it applies
// what it measures at once, even while the wrapper cannot run. It costs
// one wake-up every probeEvery (no busy loop), and the watchdog reports
// its worst lateness on its ready pipe when it changes (and once a
// bucket's span while it holds). The wrapper keeps what its watchdogs
// reported over the window, the newest report of each read only (a client
// waiting for its grant reads none meanwhile, and the older ones are
// superseded: watchdog.go, readReports), so that the next command's
// watchdog, which starts with nothing measured, gets the host's recent
// lateness with its first deadline; it also decides from it whether a
// command can start, and logs when the slack grows. The wrapper's own
// timers are not measured: the deadline is an absolute CLOCK_MONOTONIC
// reading, so a late wrapper does not make the kill late.
const (
	// DefaultKillSlack is the floor's default: the worst lateness of an
	// idle host's watchdog measured by TestWatchdogLateness (17 ms,
	// docs/elect.md), rounded up. The measured part covers busier hosts.
	DefaultKillSlack = 20 * time.Millisecond
	// SlackFactor multiplies the worst lateness measured over the window:
	// the kill's own wake-up is a new draw of the same delay, which may
	// exceed the worst one seen so far; twice the worst of the last
	// 200 or so wake-ups covered every kill measured beside a CPU hog
	// (docs/elect.md).
	SlackFactor = 2
	// SlackWindow is how long a measured lateness counts: long enough to
	// span the bursts of a busy host, short enough that a host that has
	// calmed down gets its lease back within two windows (a running
	// watchdog repeats its worst while its window holds it, and the
	// wrapper's window then holds the last repeat as long again).
	SlackWindow = 10 * time.Second
	// probeEvery is the watchdog's longest sleep: how often it measures
	// its own lateness when no deadline or extension wakes it sooner.
	probeEvery = 50 * time.Millisecond
)

// lateBuckets divide SlackWindow: the window's worst is the largest of
// their maxima, so it forgets a lateness between SlackWindow and
// SlackWindow·(1+1/lateBuckets) after it was seen.
const lateBuckets = 10

// lateWindow keeps the worst timer lateness seen over the last
// SlackWindow, in CLOCK_MONOTONIC nanoseconds.
type lateWindow struct {
	start [lateBuckets]int64 // when each bucket's span began (0: unused)
	worst [lateBuckets]int64
}

const bucketSpan = int64(SlackWindow) / lateBuckets

// note records a timer that fired late by late at now.
func (w *lateWindow) note(now, late int64) {
	if late <= 0 {
		return
	}
	s := now - now%bucketSpan
	i := (now / bucketSpan) % lateBuckets
	if w.start[i] != s {
		w.start[i], w.worst[i] = s, 0
	}
	w.worst[i] = max(w.worst[i], late)
}

// recent is the worst lateness seen within the window ending at now.
func (w *lateWindow) recent(now int64) int64 {
	var m int64
	for i := range w.start {
		if w.start[i] != 0 && now-w.start[i] < int64(SlackWindow) {
			m = max(m, w.worst[i])
		}
	}
	return m
}

// slackFor is the slack rule: the floor, raised to SlackFactor times the
// worst lateness measured over the window.
func slackFor(floor, worst int64) int64 {
	return max(floor, SlackFactor*worst)
}

// hostSlack is what this process knows of the host's lateness: the floor
// (SetKillSlack) and what its watchdogs reported over the window.
var hostSlack = struct {
	sync.Mutex
	floor  int64
	win    lateWindow
	logged int64 // the slack last logged as grown (0: none)
	log    *slog.Logger
}{floor: int64(DefaultKillSlack)}

// SetKillSlack sets the floor of the kill slack (a tool's --kill-slack)
// and where growth of the slack is logged (nil: nowhere).
func SetKillSlack(floor time.Duration, log *slog.Logger) {
	hostSlack.Lock()
	defer hostSlack.Unlock()
	hostSlack.floor, hostSlack.log = int64(max(floor, 0)), log
}

// KillSlack is the slack a deadline computed now is given.
func KillSlack() time.Duration {
	hostSlack.Lock()
	defer hostSlack.Unlock()
	return time.Duration(slackFor(hostSlack.floor, hostSlack.win.recent(monotonic())))
}

// noteReported takes a watchdog's reported worst lateness.
func noteReported(worst int64) {
	hostSlack.Lock()
	defer hostSlack.Unlock()
	hostSlack.win.note(monotonic(), worst)
}

// deadlineSlack is KillSlack for a deadline handed to a watchdog (a
// command's start, an extension). It logs when the slack has grown by a
// quarter or more since it was last logged (back at the floor, the next
// growth is logged again): only then, so that a wait for a grant whose
// watchdog measures a busy host meanwhile says nothing unless a command
// is given less of its lease for it.
func deadlineSlack() int64 {
	now := monotonic()
	hostSlack.Lock()
	floor, worst := hostSlack.floor, hostSlack.win.recent(now)
	s := slackFor(floor, worst)
	grew := s > floor && s > hostSlack.logged+hostSlack.logged/4
	if s == floor {
		hostSlack.logged = 0
	} else if grew {
		hostSlack.logged = s
	}
	log := hostSlack.log
	hostSlack.Unlock()
	if grew && log != nil {
		log.Warn("the host is starving its processes: leased commands will be killed earlier",
			"kill_slack", time.Duration(s), "timer_late", time.Duration(worst), "floor", time.Duration(floor))
	}
	return s
}

// KillSlackFlag is --kill-slack, for the tools that run a leased command.
func KillSlackFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: "kill-slack", Value: DefaultKillSlack,
		Usage: "the watchdog kills the command this long before the lease's end, or twice the worst lateness of its own timers over the last 10s before it when that is more; a lease with less left starts nothing"}
}

// SetKillSlackFlag applies --kill-slack for a tool without a logger of
// its own: growth of the slack is logged on stderr.
func SetKillSlackFlag(c *ucli.Context, tool string) error {
	d := c.Duration("kill-slack")
	if d < 0 {
		return Exitf(ExitUsage, "--kill-slack must not be negative")
	}
	SetKillSlack(d, NewLogger(os.Stderr, tool, slog.LevelInfo, UseColor(os.Stderr, false)))
	return nil
}
