package mcastd

import (
	"encoding/binary"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerPacer: a periodic timerfd(2) on CLOCK_MONOTONIC, started at the
// pacer's start, read through the netpoller (an os.File on a
// non-blocking descriptor); a read returns how many periods have passed
// since the last read.
type timerPacer struct {
	f   *os.File
	due int
}

// newPacer paces from start, one send per gap.
func newPacer(start time.Time, gap time.Duration) pacer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTickPacer(start, gap)
	}
	first := unix.NsecToTimespec(int64(max(gap-time.Since(start), time.Microsecond)))
	spec := unix.ItimerSpec{Interval: unix.NsecToTimespec(int64(gap)), Value: first}
	if err := unix.TimerfdSettime(fd, 0, &spec, nil); err != nil {
		unix.Close(fd)
		return newTickPacer(start, gap)
	}
	return &timerPacer{f: os.NewFile(uintptr(fd), "bench-pacer")}
}

func (p *timerPacer) wait() (int, error) {
	var b [8]byte
	if _, err := p.f.Read(b[:]); err != nil {
		return 0, err
	}
	p.due += int(binary.NativeEndian.Uint64(b[:]))
	return p.due, nil
}

func (p *timerPacer) stop() { p.f.Close() }
