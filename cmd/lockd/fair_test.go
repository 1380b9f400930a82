package main

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestVotingFairness: voting with the contention that starved clients
// before: two looping clients on member 1 (the first coordinator every
// requester asks), one on each other member, until they have entered
// fairEntries times between them (at most a minute). Each client must get
// a fair part of the entries: at least half of an even share. The shares
// are logged. (The critical section is `sleep`; safety is the witness
// tests' business.)
func TestVotingFairness(t *testing.T) {
	const fairEntries = 80
	c := startDaemons(t, 3, "--algo", "voting")
	daemons := []int{1, 1, 2, 3}
	entries := make([]int, len(daemons))
	timeouts := make([]int, len(daemons))
	var mu sync.Mutex
	total := 0
	start := time.Now()
	end := start.Add(time.Minute)
	var wg sync.WaitGroup
	for k, d := range daemons {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				mu.Lock()
				done := total >= fairEntries
				mu.Unlock()
				if done {
					return
				}
				cmd := exec.Command(lockdBin, "run", "--socket", c.sock(d), "--timeout", "30s", "L", "--", "sleep", "0.02")
				out, err := cmd.CombinedOutput()
				mu.Lock()
				switch code := exitCode(err); code {
				case 0:
					entries[k]++
					total++
				case 75:
					timeouts[k]++
				default:
					t.Errorf("client %d: exit %d\n%s", k, code, out)
					mu.Unlock()
					return
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fairnessFor := time.Since(start).Round(time.Millisecond)
	var shares []string
	for k, e := range entries {
		shares = append(shares, fmt.Sprintf("client %d (member %d): %d entries, %d timeouts", k, daemons[k], e, timeouts[k]))
	}
	t.Logf("%d entries in %v: %s", total, fairnessFor, strings.Join(shares, "; "))
	for k, e := range entries {
		if 2*e*len(entries) < total {
			t.Errorf("client %d on member %d got %d of %d entries, under half of an even share", k, daemons[k], e, total)
		}
	}
}

// exitCode is a finished command's exit status (0 when err is nil).
func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
