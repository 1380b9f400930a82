//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64 || mips64 || mips64le)

package clockd

import (
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/clocksync"
)

// TestKernelClockCalls checks what --apply asks of adjtimex, against a
// recording fake (the real system clock is never touched by tests): a slew
// in microseconds as a single-shot offset on its own, the frequency in
// 2^-16 ppm, and a forward step as ADJ_SETOFFSET in nanoseconds.
func TestKernelClockCalls(t *testing.T) {
	var calls []syscall.Timex
	kc := &kernelClock{k: clocksync.KernelSlew{BaseFreqPPM: 10}, adj: func(tx *syscall.Timex) (int, error) {
		calls = append(calls, *tx)
		if tx.Modes == adjOffsetSSRead {
			tx.Offset = 0
		}
		return 0, nil
	}}
	now := time.Unix(1000, 0)
	if err := kc.Update(now, -3*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// read pending, slew, frequency
	if len(calls) != 3 || calls[0].Modes != adjOffsetSSRead {
		t.Fatalf("calls %+v", calls)
	}
	if c := calls[1]; c.Modes != adjOffsetSingleShot || c.Offset != -1500 {
		t.Fatalf("slew call %+v, want single-shot -1500 µs (half of -3 ms)", c)
	}
	if c := calls[2]; c.Modes != adjFrequency || c.Freq != 10*65536 {
		t.Fatalf("frequency call %+v, want 10 ppm = %d", c, 10*65536)
	}
	calls = nil
	if err := kc.Update(now.Add(time.Second), 2500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if c := calls[1]; c.Modes != adjSetOffset|adjNano || c.Time.Sec != 2 || c.Time.Usec != 500_000_000 {
		t.Fatalf("step call %+v, want ADJ_SETOFFSET|ADJ_NANO of 2 s + 500,000,000 ns", c)
	}
	for _, c := range calls {
		if c.Modes&adjSetOffset != 0 && (c.Time.Sec < 0 || c.Time.Usec < 0) {
			t.Fatalf("backward step asked of the kernel: %+v", c)
		}
	}
}
