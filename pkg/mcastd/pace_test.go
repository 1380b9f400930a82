package mcastd

import (
	"testing"
	"time"
)

// TestPacerNeverEarly: a pacer releases message k no sooner than start +
// k·gap, counts every period (a slow reader gets the sends it missed at
// once, none dropped), and its count only grows.
func TestPacerNeverEarly(t *testing.T) {
	for name, mk := range map[string]func(time.Time, time.Duration) pacer{
		"default": newPacer,
		"ticker":  func(s time.Time, g time.Duration) pacer { return newTickPacer(s, g) },
	} {
		t.Run(name, func(t *testing.T) {
			const gap = 2 * time.Millisecond
			start := time.Now()
			p := mk(start, gap)
			defer p.stop()
			last := 0
			for i := 0; i < 20; i++ {
				if i == 10 {
					// A reader that falls behind: the sends due
					// meanwhile are counted, not lost.
					time.Sleep(5 * gap) // the lag under test, not a wait for an event
				}
				due, err := p.wait()
				if err != nil {
					t.Fatal(err)
				}
				if allowed := int(time.Since(start) / gap); due > allowed {
					t.Fatalf("wait %d: %d sends due after %v, at most %d allowed", i, due, time.Since(start), allowed)
				}
				if due <= last {
					t.Fatalf("wait %d: due %d after %d", i, due, last)
				}
				if i == 10 && name == "default" && due-last < 5 {
					t.Fatalf("after a lag of 5 periods only %d more sends due", due-last)
				}
				last = due
			}
		})
	}
}
