package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBenchFixedReport: three members of a fixed group run `mcast bench`
// at once; each reports every message of every member delivered, no
// check failed, and what it sent again and got twice (the fixed group's
// repair and relays: a flood's dissemination, docs/mcast.md).
func TestBenchFixedReport(t *testing.T) {
	const n, count = 3, 2000
	var peers []string
	for i, a := range freePorts(t, n) {
		peers = append(peers, fmt.Sprintf("%d=%s", i+1, a))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	outs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, mcastBin, "bench", "--id", fmt.Sprint(i+1), "--peers", strings.Join(peers, ","),
				"--count", fmt.Sprint(count), "--size", "64", "--json", "--log-level", "warn")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			outs[i] = string(out)
			if err != nil {
				errs[i] = fmt.Errorf("%v: %s", err, stderr.String())
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("member %d: %v", i+1, errs[i])
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(outs[i]), &r); err != nil {
			t.Fatalf("member %d: %q: %v", i+1, outs[i], err)
		}
		_, resent := r["resent"].(float64)
		_, dups := r["duplicates"].(float64)
		if r["delivered"] != float64(n*count) || r["errors"] != float64(0) || !resent || !dups {
			t.Errorf("member %d: %s; want %d delivered, 0 errors, resent and duplicates counted", i+1, outs[i], n*count)
		}
	}
}
