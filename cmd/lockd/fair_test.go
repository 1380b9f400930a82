package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestVotingFairness: voting with the contention that starved clients
// before: two looping clients on member 1 (the first coordinator every
// requester asks), one on each other member, for fairnessFor. Each client
// must get a fair part of the entries: at least half of an even share.
// The shares are logged.
func TestVotingFairness(t *testing.T) {
	const fairnessFor = 8 * time.Second
	c := startDaemons(t, 3, "--algo", "voting")
	file := filepath.Join(c.Dir, "witness")
	daemons := []int{1, 1, 2, 3}
	entries := make([]int, len(daemons))
	timeouts := make([]int, len(daemons))
	end := time.Now().Add(fairnessFor)
	var wg sync.WaitGroup
	for k, d := range daemons {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				cl := c.run(d, file, 20*time.Millisecond, "--timeout", "3s")
				cl.wait()
				switch cl.code {
				case 0:
					entries[k]++
				case 75:
					timeouts[k]++
				default:
					t.Errorf("client %d: exit %d\n%s", k, cl.code, cl.out.String())
					return
				}
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, e := range entries {
		total += e
	}
	var shares []string
	for k, e := range entries {
		shares = append(shares, fmt.Sprintf("client %d (member %d): %d entries, %d timeouts", k, daemons[k], e, timeouts[k]))
	}
	t.Logf("%d entries in %v: %s", total, fairnessFor, strings.Join(shares, "; "))
	checkWitness(t, file)
	for k, e := range entries {
		if 2*e*len(entries) < total {
			t.Errorf("client %d on member %d got %d of %d entries, under half of an even share", k, daemons[k], e, total)
		}
	}
}
