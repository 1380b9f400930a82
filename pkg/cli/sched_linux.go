package cli

import (
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
