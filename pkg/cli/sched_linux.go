package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Policies and flags of sched_setscheduler(2), from <linux/sched.h>.
const (
	schedOther       = 0
	schedRR          = 2
	schedResetOnFork = 0x40000000
)

// realtimePolicy is what SetRealtime asks for: round robin, and normal
// scheduling again for every process or thread forked (sched(7)).
const realtimePolicy = schedRR | schedResetOnFork

// The keeper looks for threads started since its last look (they start
// as normal threads: sched.go) realtimeRescanMin after SetRealtime, and
// then at twice the last interval, up to realtimeRescan; a look that
// finds a new thread starts again from realtimeRescanMin. So the burst
// of threads a Go process starts in its first second (sockets, a
// watchdog's exec, blocking calls) is taken within milliseconds, and a
// process whose threads are all taken looks once a second (a directory
// read and one sched_getscheduler per thread: tens of microseconds).
const (
	realtimeRescanMin = 2 * time.Millisecond
	realtimeRescan    = time.Second
)

// realtime is the priority SetRealtime applied (0: none yet).
var realtime struct {
	sync.Mutex
	prio int
	kept bool // the keeper runs
}

// SetRealtime puts every thread of this process under SCHED_RR at prio,
// with SCHED_RESET_ON_FORK, and starts a keeper that does the same for
// threads started later (sched.go). It fails, changing nothing, when the
// first thread cannot be changed (EPERM without root, CAP_SYS_NICE or an
// RLIMIT_RTPRIO of at least prio); the error says why.
func SetRealtime(prio int) error {
	realtime.Lock()
	defer realtime.Unlock()
	if err := setSched(0, realtimePolicy, prio); err != nil {
		return explainSched(err, prio)
	}
	realtime.prio = prio
	if _, err := applyRealtime(prio); err != nil {
		return err
	}
	if !realtime.kept {
		realtime.kept = true
		go keepRealtime()
	}
	return nil
}

// keepRealtime puts threads started since its last look under the policy,
// for as long as the process runs.
func keepRealtime() {
	every := realtimeRescanMin
	for {
		time.Sleep(every)
		realtime.Lock()
		n, _ := applyRealtime(realtime.prio)
		realtime.Unlock()
		if every = min(2*every, realtimeRescan); n > 0 {
			every = realtimeRescanMin
		}
	}
}

// applyRealtime sets SCHED_RR|SCHED_RESET_ON_FORK at prio on each thread
// in /proc/self/task that is not under it yet, and says how many it
// changed. A thread that ended meanwhile is no error.
func applyRealtime(prio int) (int, error) {
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return 0, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		tid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, _ := getSched(tid); p == realtimePolicy {
			continue
		}
		switch err := setSched(tid, realtimePolicy, prio); {
		case err == nil:
			n++
		case errors.Is(err, syscall.ESRCH):
		default:
			return n, explainSched(err, prio)
		}
	}
	return n, nil
}

// schedParam is struct sched_param.
type schedParam struct{ priority int32 }

func setSched(tid, policy, prio int) error {
	p := schedParam{int32(prio)}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), uintptr(policy), uintptr(unsafe.Pointer(&p))); e != 0 {
		return e
	}
	return nil
}

// getSched is sched_getscheduler(2): the thread's policy, flags included.
func getSched(tid int) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// explainSched says why sched_setscheduler failed, with the limit that
// decides it when it is EPERM.
func explainSched(err error, prio int) error {
	if !errors.Is(err, syscall.EPERM) {
		return fmt.Errorf("sched_setscheduler SCHED_RR %d: %w", prio, err)
	}
	var rl syscall.Rlimit
	const rlimitRTPrio = 14 // RLIMIT_RTPRIO
	if syscall.Getrlimit(rlimitRTPrio, &rl) == nil && rl.Cur < uint64(prio) {
		return fmt.Errorf("sched_setscheduler SCHED_RR %d: %w (not root, no CAP_SYS_NICE, RLIMIT_RTPRIO %d: ulimit -r %d or systemd's LimitRTPRIO=%d allows it)", prio, err, rl.Cur, WatchdogPriority, WatchdogPriority)
	}
	return fmt.Errorf("sched_setscheduler SCHED_RR %d: %w (a container or cgroup without realtime runtime?)", prio, err)
}

// A killed command needs the CPU to die. SIGKILL ends a task's user
// code at once, but its exit (the kernel's do_exit: closing its files,
// tearing down its memory, which for a command that touched hundreds of
// megabytes is most of it) runs in the dying task's own context, at its
// own scheduling policy: on a host whose cores are all busy a normal
// process waits behind every CPU hog for each slice of it, and a command
// killed at its lease's deadline may still hold what it held (its
// memory, a file lock, a socket) when the next holder's command starts
// (docs/performance.md, "On a busy machine"). So a process that runs
// under realtime scheduling itself (SetRealtime: --realtime, and the
// privilege for it), once it has SIGKILLed a command's group, puts every
// task of that group that is dying under SCHED_RR|SCHED_RESET_ON_FORK at
// RealtimePriority (boostKilled): the exit then runs ahead of the load.
// A dying task runs no user code again, so no user code runs at realtime
// priority; a task that is not dying (one that joined the group after
// the kill) is left as it is.

// Flags and signals of a task, from /proc/<pid>/task/<tid>/stat.
const (
	pfExiting  = 0x4          // PF_EXITING: do_exit has begun
	sigkillBit = 1 << (9 - 1) // SIGKILL in the task's pending signals
	statState  = 0            // fields counted after the comm's ')'
	statPgrp   = 2
	statFlags  = 6              // proc(5) field 9
	statSignal = 28             // proc(5) field 31: pending signals
	statMin    = statSignal + 1 // fields a stat line has at least
)

// realtimeOn is the priority SetRealtime gave this process (0: none).
func realtimeOn() int {
	realtime.Lock()
	defer realtime.Unlock()
	return realtime.prio
}

// killGroup sends SIGKILL to process group pgid and then, when this
// process runs under realtime scheduling, gives what it killed the CPU
// to die (boostKilled). Kill first, boost second: a task is boosted only
// once it is dying.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if realtimeOn() != 0 {
		boostKilled(pgid)
	}
}

// boostKilled puts each thread of process group pgid that is dying
// (SIGKILL pending, or do_exit begun) and not yet a zombie under
// SCHED_RR|SCHED_RESET_ON_FORK at RealtimePriority, and says how many it
// changed. One pass over /proc, no retry: a group that was SIGKILLed as
// a whole cannot grow (fork fails once SIGKILL is pending, and the kill
// reaches every task in the group at once, the kernel's kill_pgrp), and
// errors (a thread gone meanwhile: ESRCH; not permitted: EPERM) are
// skipped, silently: a task that cannot be boosted dies as it would have
// without.
//
// Races. Between reading a thread's stat and setting its policy the
// thread may exit, be reaped and its ID be reused: the kernel hands out
// IDs in turn, so the ID would have to come round all of pid_max (32768
// at least) within those microseconds; and the task the reused ID names
// would get the policy only if it were dying itself. A thread that has
// taken its SIGKILL off its pending set but not yet set PF_EXITING (a few
// instructions in get_signal) is running at that moment and is passed
// over: it is on a CPU already.
func boostKilled(pgid int) int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var buf [1024]byte
	n := 0
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		f, ok := readStat("/proc/"+name+"/stat", buf[:])
		if !ok || f.pgrp != pgid {
			continue
		}
		t, err := os.Open("/proc/" + name + "/task")
		if err != nil {
			continue
		}
		tids, _ := t.Readdirnames(-1)
		t.Close()
		for _, tn := range tids {
			tid, err := strconv.Atoi(tn)
			if err != nil {
				continue
			}
			f, ok := readStat("/proc/"+name+"/task/"+tn+"/stat", buf[:])
			if !ok || f.pgrp != pgid || !f.dying() {
				continue
			}
			if p, _ := getSched(tid); p == realtimePolicy {
				continue
			}
			if setSched(tid, realtimePolicy, RealtimePriority) == nil {
				n++
			}
		}
	}
	return n
}

// taskStat is what boostKilled reads of a task's stat line.
type taskStat struct {
	state         byte
	pgrp          int
	flags, signal uint64
}

// dying reports whether the task was killed or is exiting, and still
// runs (a zombie has nothing left to run).
func (s taskStat) dying() bool {
	if s.state == 'Z' || s.state == 'X' || s.state == 'x' {
		return false
	}
	return s.signal&sigkillBit != 0 || s.flags&pfExiting != 0
}

// readStat reads and parses a stat file into buf, without allocating
// for the line.
func readStat(path string, buf []byte) (taskStat, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return taskStat{}, false
	}
	m, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || m <= 0 {
		return taskStat{}, false
	}
	return parseStat(buf[:m])
}

// parseStat parses a /proc stat line: pid (comm) state ppid pgrp ...;
// comm may hold spaces and parentheses, so the fields start after the
// last ')'.
func parseStat(b []byte) (taskStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return taskStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < statMin || len(f[statState]) != 1 {
		return taskStat{}, false
	}
	var s taskStat
	var err error
	s.state = f[statState][0]
	if s.pgrp, err = strconv.Atoi(string(f[statPgrp])); err != nil {
		return taskStat{}, false
	}
	if s.flags, err = strconv.ParseUint(string(f[statFlags]), 10, 64); err != nil {
		return taskStat{}, false
	}
	if s.signal, err = strconv.ParseUint(string(f[statSignal]), 10, 64); err != nil {
		return taskStat{}, false
	}
	return s, true
}
