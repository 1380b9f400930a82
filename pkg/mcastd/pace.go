package mcastd

import "time"

// A pacer releases a rated bench's sends: wait blocks until at least one
// more is due and returns how many are due in all since the start
// (message k is due at start + k/rate, as cpgflood's are; on a busy host
// the sends fall behind and go out together).
//
// The times come from the clock alone, never from when the member's
// process happens to wake. A Go process with nothing to read sleeps in
// epoll to the whole millisecond, so a Go ticker fires at the process's
// next wake-up, most often a frame's arrival: measured in a 5-member
// TOTEM group, the messages a ticker made went out a median 24 µs after
// the token that woke the process had left (uniform times would give
// half a rotation, about 100 µs), and so waited a whole rotation for the
// next. cpgflood polls for each send's time, in a process of its own;
// the bench member is the protocol's own process, so it sleeps on a
// timer the kernel wakes it for (pace_linux.go: a timerfd in the
// netpoller), one wake-up per send, as a writer into `mcast run`'s stdin
// costs. The kernel's timer itself comes 40-60 µs late on the 2-core VM
// of docs/mcast.md (measured idle, with the timer slack at 1 ns or 50
// µs alike); a message is stamped when it is handed to the member, as
// cpgflood stamps its own just before cpg_mcast_joined, so that delay is
// the generator's and not counted.
type pacer interface {
	wait() (due int, err error)
	stop()
}

// tickPacer: a Go ticker, where the kernel's timer is not at hand (its
// sends follow the process's wake-ups, as above).
type tickPacer struct {
	t     *time.Ticker
	start time.Time
	gap   time.Duration
}

func newTickPacer(start time.Time, gap time.Duration) *tickPacer {
	return &tickPacer{time.NewTicker(gap), start, gap}
}

func (p *tickPacer) wait() (int, error) {
	now := <-p.t.C
	return int(now.Sub(p.start) / p.gap), nil
}

func (p *tickPacer) stop() { p.t.Stop() }
