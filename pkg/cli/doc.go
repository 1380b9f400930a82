// Package cli holds what every roundtable binary shares on the command line:
// common flags with environment variables (<TOOL>_<FLAG>), peer lists,
// bind-address templates, member start-up, event output (one line per
// event, or JSON lines), logging to stderr (coloured only on a terminal),
// ready files, control sockets, the exit code table, supervision of a
// child command, and realtime scheduling for the processes whose timers
// decide who holds what (sched.go, --realtime).
//
// Exit codes:
//
//	0        success (or, with a child, the child's own code)
//	128+n    the child was killed by signal n
//	64       usage error: bad flag, peer list or argument
//	69       peers unreachable, no quorum, cannot bind, a daemon that does not answer
//	75       busy or timed out (overridable where documented)
//	76       lock, leadership or ticket lost while the child ran
//	77       not permitted (clocksync serve --apply without CAP_SYS_TIME)
//	126      the child cannot be executed
//	127      the child was not found
package cli
