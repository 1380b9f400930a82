//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64 || mips64 || mips64le)

package clockd

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/roundtable-go/roundtable/pkg/clocksync"
)

// adjtimex(2) mode bits (linux/timex.h).
const (
	adjFrequency        = 0x0002
	adjSetOffset        = 0x0100
	adjNano             = 0x2000
	adjOffsetSingleShot = 0x8001 // ADJ_ADJTIME | ADJ_OFFSET_SINGLESHOT: adjtime() semantics
	adjOffsetSSRead     = 0xa001 // the same, read-only: what is left to slew
	capSysTime          = 25
)

// kernelClock is --apply: the node's time is the system clock, and
// KernelSlew's plans go to the kernel with adjtimex.
type kernelClock struct {
	k   clocksync.KernelSlew
	adj func(*syscall.Timex) (int, error) // syscall.Adjtimex; replaced in tests
}

// newKernelClock checks that this process may change the clock and reads
// the kernel's current frequency as the base the loop corrects from.
func newKernelClock(makestep time.Duration) (*kernelClock, error) {
	if !hasCapability(capSysTime) {
		return nil, fmt.Errorf("--apply changes the system clock and needs CAP_SYS_TIME (run as root); without --apply the clock is disciplined in memory only")
	}
	kc := &kernelClock{adj: syscall.Adjtimex, k: clocksync.KernelSlew{MakeStep: makestep}}
	var tx syscall.Timex
	if _, err := kc.adj(&tx); err != nil {
		return nil, fmt.Errorf("adjtimex: %v", err)
	}
	kc.k.BaseFreqPPM = float64(tx.Freq) / 65536
	return kc, nil
}

func (kc *kernelClock) At(sys time.Time) time.Time { return sys }

func (kc *kernelClock) pending() time.Duration {
	tx := syscall.Timex{Modes: adjOffsetSSRead}
	if _, err := kc.adj(&tx); err != nil {
		return 0
	}
	return time.Duration(tx.Offset) * time.Microsecond
}

func (kc *kernelClock) Update(sys time.Time, offset time.Duration) error {
	p := kc.k.Update(sys, offset, kc.pending())
	if p.Step > 0 {
		// Forward only: KernelSlew never plans a negative step.
		tx := syscall.Timex{Modes: adjSetOffset | adjNano}
		tx.Time.Sec = int64(p.Step / time.Second)
		tx.Time.Usec = int64(p.Step % time.Second) // nanoseconds with ADJ_NANO
		if _, err := kc.adj(&tx); err != nil {
			return fmt.Errorf("adjtimex step %v: %v", p.Step, err)
		}
	}
	// The kernel takes a single-shot offset on its own, without other
	// mode bits; it is in microseconds.
	tx := syscall.Timex{Modes: adjOffsetSingleShot, Offset: int64(p.Slew / time.Microsecond)}
	if _, err := kc.adj(&tx); err != nil {
		return fmt.Errorf("adjtimex slew %v: %v", p.Slew, err)
	}
	tx = syscall.Timex{Modes: adjFrequency, Freq: int64(p.FreqPPM * 65536)}
	if _, err := kc.adj(&tx); err != nil {
		return fmt.Errorf("adjtimex frequency %.3f ppm: %v", p.FreqPPM, err)
	}
	return nil
}

func (kc *kernelClock) Status() clockStatus {
	var tx syscall.Timex
	_, _ = kc.adj(&tx)
	return clockStatus{FreqPPM: float64(tx.Freq) / 65536, Pending: kc.pending().Seconds(), SystemClock: true}
}

// hasCapability reads the effective capability set from /proc.
func hasCapability(bit uint) bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return os.Geteuid() == 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<bit) != 0
		}
	}
	return false
}
