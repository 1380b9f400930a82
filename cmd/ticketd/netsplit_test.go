package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestCutOffMember: the member whose client holds a ticket is cut off from
// every other member (iptables in network namespaces of its own, set up
// by scripts/netsplit.sh -j and removed after). Its client stops the
// command (exit 76) before the others hand the ticket out again; the
// member that waited outside gets it; once the network heals the cut-off
// member finds itself excluded and serves again by joining afresh.
func TestCutOffMember(t *testing.T) {
	dir := t.TempDir()
	cc, ctl := clitest.Netsplit(t, dir, 5, nil, "-j", ticketdBin, "serve", "--no-color", "--tickets", "4",
		"--socket", filepath.Join(dir, "{id}.sock"), "--max-kill-grace", "300ms", "--round", "250ms")
	c := &cluster{cc}
	core := c.waitSettled(4)
	victim := core[1]
	file := filepath.Join(dir, "witness")
	holder := c.run(victim, file, time.Hour)
	first := waitEnter(t, file, holder)
	ctl("isolate", fmt.Sprint(victim))
	holder.exits(t, 76, "the cut-off member's client")
	c.waitCore(4, victim)
	var cls []*client
	for m := 1; m <= 5; m++ {
		if m != victim {
			cls = append(cls, c.run(m, file, 2*time.Second, "--timeout", "30s"))
		}
	}
	for i, cl := range cls {
		cl.exits(t, 0, fmt.Sprintf("client %d", i))
	}
	ctl("heal")
	again := c.run(victim, file, 10*time.Millisecond, "--timeout", "30s")
	again.exits(t, 0, "a client of the healed member")
	checkWitness(t, file, 4, map[int]bool{first.pid: true})
	out, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.out", victim)))
	if !strings.Contains(string(out), "excluded") {
		t.Fatalf("the cut-off member did not report its exclusion:\n%s", out)
	}
}
