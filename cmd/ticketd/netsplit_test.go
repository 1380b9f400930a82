package main

import (
	"fmt"
	"path/filepath"
	"testing"

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
		"--socket", filepath.Join(dir, "{id}.sock"), "--state-file", filepath.Join(dir, "{id}.epoch"), "--max-kill-grace", "300ms", "--round", "250ms")
	c := &cluster{cc}
	c.cutAndBack(t, "cut-off", func(m int) { ctl("isolate", fmt.Sprint(m)) }, func(int) { ctl("heal") })
}
