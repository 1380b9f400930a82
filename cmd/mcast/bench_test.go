package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkViewChange: five members in total order with the default
// settings; one that is not the leader is SIGKILLed, and the time runs
// until every survivor has printed the view without it (the time on its
// own view line). Each iteration starts a fresh group; the median and the
// worst are reported (corosync's defaults: a token timeout of 3 s plus
// 650 ms per member beyond two, and consensus after that).
//
//	go test -run '^$' -bench ViewChange -benchtime 20x ./cmd/mcast
func BenchmarkViewChange(b *testing.B) {
	var took []time.Duration
	for i := 0; i < b.N; i++ {
		ms := startGroup(b, 5, "--order", "total")
		inView(b, ms, []int{1, 2, 3, 4, 5}, 30*time.Second)
		victim := ms[2+i%3] // never the leader (1) nor the next one
		killed := time.Now()
		victim.cmd.Process.Signal(syscall.SIGKILL)
		rest := without(ms, victim.id)
		var want []int
		for _, m := range rest {
			want = append(want, m.id)
		}
		inView(b, rest, want, 30*time.Second)
		last := time.Time{}
		for _, m := range rest {
			at, ok := lastViewTime(m.log)
			if !ok {
				b.Fatalf("member %d: no view line", m.id)
			}
			if at.After(last) {
				last = at
			}
		}
		took = append(took, last.Sub(killed))
		for _, m := range ms {
			m.cmd.Process.Kill()
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
}

// lastViewTime is the time on the last view line of a --json log.
func lastViewTime(log string) (time.Time, bool) {
	data, _ := os.ReadFile(log)
	var at time.Time
	ok := false
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.Contains(l, `"event":"view"`) {
			continue
		}
		var v struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal([]byte(l), &v) == nil {
			at, ok = v.Time, true
		}
	}
	return at, ok
}
