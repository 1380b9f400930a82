// Package proc is what a roundtable process owes the shell that started
// it: the exit code table, errors that carry their exit code, and
// supervision of a child command (own process group, signals passed on,
// killed with its parent, SIGTERM then SIGKILL).
//
// It imports only the standard library, so that a short-lived client such
// as `lockd run` can use it without initialising the command-line
// framework and the network packages its daemon needs (package cli builds
// on it and re-exports its names).
//
// Exit codes:
//
//	0        success (or, with a child, the child's own code)
//	128+n    the child was killed by signal n
//	64       usage error: bad flag, peer list or argument
//	69       peers unreachable, no quorum, cannot bind
//	75       busy or timed out (overridable where documented)
//	76       lock, leadership or ticket lost while the child ran
//	77       not permitted (clocksync serve --apply without CAP_SYS_TIME)
//	126      the child cannot be executed
//	127      the child was not found
package proc
