package cli

import (
	"log/slog"
	"os"
	"strconv"

	ucli "github.com/urfave/cli/v2"
)

// Realtime scheduling. The processes whose lateness decides who holds
// what (an elect member, a lockd or ticketd daemon, the client that runs
// a ticket's command, and the watchdog that kills a leased command) use
// little CPU but must run when their timers fire. On a host whose cores
// are all busy a normal (SCHED_OTHER) process waits behind every CPU hog
// for its turn, and the failure detector, the lease and the kill slack
// all stretch by that wait (docs/performance.md, "On a busy machine").
// corosync meets the same problem by running itself under round-robin
// realtime scheduling by default (corosync -r; -p turns it off), chronyd
// offers SCHED_FIFO with -P. Realtime does the same here: SCHED_RR at a
// low realtime priority, above every normal process and below the
// kernel's interrupt threads and corosync's maximum, with
// SCHED_RESET_ON_FORK so that the user's command, and everything it
// starts, runs as a normal process (sched(7)).
//
// SCHED_RESET_ON_FORK also applies to the threads a process creates
// (the kernel resets the policy in every clone, sched_fork), so threads
// the Go runtime starts later begin as normal threads: a keeper looks
// for them, within milliseconds while threads are being started and once
// every realtimeRescan when none was for a while (sched_linux.go), and
// puts them under the policy too.
const (
	// RealtimePriority is the SCHED_RR priority of a member or client
	// (1..99; corosync takes 99).
	RealtimePriority = 1
	// WatchdogPriority is the watchdog's: one above, so that a watchdog
	// kills at its deadline even beside a realtime member that spins.
	WatchdogPriority = RealtimePriority + 1
)

// watchdogRTEnv tells a watchdog (RunWatchdog) to put itself under
// SCHED_RR at the priority it holds; set only by a process that managed
// to do so itself.
const watchdogRTEnv = "ROUNDTABLE_WATCHDOG_REALTIME"

// FlagRealtime is --realtime.
const FlagRealtime = "realtime"

// RealtimeFlag is --realtime, for the daemons and clients whose timers
// decide leadership or holding (elect run, lockd serve, ticketd serve and
// run), on by default. A command killed at its lease's end, a normal
// process, is given the CPU to finish exiting (boostKilled,
// sched_linux.go), so that a member scheduled ahead of the load does not
// hand its resource on while the command still exits.
func RealtimeFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: FlagRealtime, Value: true,
		Usage: "run under SCHED_RR realtime priority " + strconv.Itoa(RealtimePriority) + " (as corosync -r does; a leased command's watchdog at " + strconv.Itoa(WatchdogPriority) + "), so that a busy host does not make this process's timers late; the command runs as a normal process, and only once killed gets priority " + strconv.Itoa(RealtimePriority) + " to finish exiting; needs root, CAP_SYS_NICE or RLIMIT_RTPRIO, else a note on stderr and normal scheduling; --realtime=false: normal scheduling"}
}

// RealtimeOptInFlag is --realtime for a member that moves bulk data
// (mcast run and bench), off by default. Its timers decide views as a
// daemon's decide holders, but it spends the CPU its input asks for: under
// realtime a member that floods the group runs ahead of every normal
// process on the host, up to the kernel's realtime throttle
// (sched_rt_runtime_us), so the host's owner turns it on.
func RealtimeOptInFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: FlagRealtime, Value: false,
		Usage: "run under SCHED_RR realtime priority " + strconv.Itoa(RealtimePriority) + ", as corosync runs itself by default (sched_rr), so that a busy host does not delay this member's frames, token and timers; off by default: a member that floods the group would run ahead of every normal process on the host; needs root, CAP_SYS_NICE or RLIMIT_RTPRIO, else a note on stderr and normal scheduling"}
}

// RealtimeClientFlag is --realtime for a client that leases a command
// from a member (ticketd run), off by default. The member's timers decide
// who holds what and run under realtime scheduling by default; a client
// and its watchdog under it cost a pool with many clients half of its
// grants (scripts/bench-ticketd.sh part 4, 50 clients against 5 members:
// 0.34-0.35 of lockd's grants with realtime clients, 0.43-0.44 with realtime
// watchdogs only, 0.50-0.64 with both normal, docs/ticketd.md "Busy
// hosts"), and a normal client's late renewals cost its own command at
// worst, never the pool: the watchdog's kill slack shortens the lease
// the command may use (slack.go).
// Its environment variable is TOOL_RUN_REALTIME, not the members'
// TOOL_REALTIME: one variable, one meaning and one default.
func RealtimeClientFlag(tool string) ucli.Flag {
	return &ucli.BoolFlag{Name: FlagRealtime, Value: false, EnvVars: []string{Env(tool, "run-"+FlagRealtime)},
		Usage: "run this client and its watchdog under SCHED_RR realtime priority " + strconv.Itoa(RealtimePriority) + " (the watchdog " + strconv.Itoa(WatchdogPriority) + "), as the members do by default, so that a busy host does not make the lease's renewals and deadline late; off by default: with many clients at once it halves a pool's grants; needs root, CAP_SYS_NICE or RLIMIT_RTPRIO"}
}

// watchdogRT is the priority watchdogs started from now on are asked to
// take (0: none).
var watchdogRT int

// ApplyRealtime applies --realtime: when it is on, it puts this process
// under SCHED_RR (SetRealtime) and asks the watchdogs it starts to do the
// same; when that is not permitted it says so on log, once, at INFO, and
// the process runs as a normal one. Never an error: a member without the
// privilege still works, only less well on a busy host.
func ApplyRealtime(c *ucli.Context, log *slog.Logger) {
	if c.Bool(FlagRealtime) {
		realtimeOrSay(log)
	}
}

// realtimeOrSay is ApplyRealtime with --realtime on.
func realtimeOrSay(log *slog.Logger) {
	if err := SetRealtime(RealtimePriority); err != nil {
		if log != nil {
			log.Info("realtime scheduling is off, timers may run late on a busy host: "+err.Error()+"; --realtime=false silences this",
				"pid", os.Getpid())
		}
		return
	}
	watchdogRT = WatchdogPriority
	if log != nil {
		log.Debug("realtime scheduling on", "policy", "SCHED_RR|SCHED_RESET_ON_FORK", "priority", RealtimePriority)
	}
}

// watchdogRealtime is called by a watchdog at its start: it takes the
// priority its supervisor asked for, silently (the supervisor, under the
// same limits, managed to).
func watchdogRealtime() {
	if p, err := strconv.Atoi(os.Getenv(watchdogRTEnv)); err == nil && p > 0 {
		_ = SetRealtime(p)
	}
}

// watchdogEnviron is the environment entry that passes watchdogRT on.
func watchdogEnviron() []string {
	if watchdogRT == 0 {
		return nil
	}
	return []string{watchdogRTEnv + "=" + strconv.Itoa(watchdogRT)}
}
