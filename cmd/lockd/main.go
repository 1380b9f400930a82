// Command lockd is distributed mutual exclusion for scripts: a daemon per
// host ('lockd serve') and clients ('lockd run', 'hold', 'session',
// 'status', 'watch') that talk to it over a Unix socket. See pkg/mutex.
//
// This binary is lockd's front: the short-lived `lockd run NAME -- cmd`
// and `lockd hold NAME`, started once per critical section, run here, in
// a program that links only their client (ctl.Quick). Every other command
// line, the daemon included, is handed to lockd-full, the complete
// program, installed beside this one: the process becomes lockd-full with
// the same arguments and the same process ID.
//
// Why two binaries: on a machine where a page fault costs 15-30 µs, most
// of a `lockd run` is the pages it touches, and the Go runtime's start
// touches more of a bigger binary (its type and itab tables, its function
// table, the code it runs spread over more of the file). The complete
// program is 6 MB; this one is 2 MB, and a `lockd run L -- true` through it
// takes about 1 ms less (README, "What makes lockd run cheap").
package main

import (
	"os"

	"github.com/roundtable-go/roundtable/cmd/lockd/internal/ctl"
	"github.com/roundtable-go/roundtable/pkg/proc"
)

// full is the complete program's file name.
const full = "lockd-full"

func main() {
	// From main, not from a package's init as lockd-full does it: while
	// packages initialise, the runtime keeps the main goroutine on the
	// main thread, so each of its waits (for os/signal's set-up, say)
	// hands the processor to another thread, started for it. From main the
	// client starts two threads fewer and a `lockd run` takes about 0.5 ms
	// less (README, "What makes lockd run cheap").
	if ok, err := ctl.Quick(os.Args[1:]); ok {
		proc.Exit(ctl.Tool, err)
	}
	err := proc.Handover(full)
	if proc.Code(err) == proc.ExitUnavailable {
		os.Stderr.WriteString("lockd: " + err.Error() + " (it is built and installed with lockd: go build ./cmd/lockd/... in a checkout, or go install github.com/roundtable-go/roundtable/cmd/lockd/...@latest); `lockd run` and `lockd hold` work without it, every other command needs it\n")
		os.Exit(proc.ExitUnavailable)
	}
	proc.Exit(ctl.Tool, err)
}
