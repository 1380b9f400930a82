package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// startKeyed starts a pool of members members and n tickets, each member
// with its own key file holding key (as on separate hosts).
func startKeyed(t *testing.T, members, n int, key string, args ...string) *cluster {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", dir)
	for i := 1; i <= members; i++ {
		clitest.WriteKeys(t, keyPath(dir, i), key)
	}
	return &cluster{clitest.StartCluster(t, dir, members, append([]string{"-j", ticketdBin, "serve", "--no-color",
		"--tickets", fmt.Sprint(n), "--socket", filepath.Join(dir, "{id}.sock"), "--max-kill-grace", "300ms",
		"--key-file", filepath.Join(dir, "{id}.key")}, args...)...)}
}

func keyPath(dir string, i int) string { return filepath.Join(dir, fmt.Sprintf("%d.key", i)) }

// frames sums member i's frame counters over its slots (ticketd status
// --json).
func (c *cluster) frames(i int) map[string]uint64 {
	c.T.Helper()
	out, err := exec.Command(ticketdBin, "status", "--json", "--socket", c.sock(i)).Output()
	if err != nil {
		c.T.Fatalf("ticketd status of member %d: %v", i, err)
	}
	clitest.CheckJSON(c.T, "ticketd", out)
	var st struct {
		Slots []struct {
			Frames map[string]uint64 `json:"frames"`
		} `json:"slots"`
	}
	if err := json.Unmarshal(out, &st); err != nil || len(st.Slots) == 0 {
		c.T.Fatalf("ticketd status of member %d: %q %v", i, out, err)
	}
	sum := map[string]uint64{}
	for _, s := range st.Slots {
		for k, v := range s.Frames {
			sum[k] += v
		}
	}
	return sum
}

// TestKeyRotation changes the key of a running pool under load by the
// three steps of docs/design.md, member by member, SIGHUP after each file
// change: every client gets a ticket (exit 0), the witness sees one
// holder per ticket, and no member drops a frame for authentication.
func TestKeyRotation(t *testing.T) {
	oldKey, newKey := clitest.NewKey(t), clitest.NewKey(t)
	// Rounds of 500 ms, as the other loaded tests: a member starved of CPU
	// for a support window would rightly lose its ticket.
	c := startKeyed(t, 3, 3, oldKey, "--round", "500ms")
	c.waitSettled(3)
	file := filepath.Join(c.Dir, "witness")
	clitest.RotateUnderLoad(t, c.Cluster, 3, func(m int) string { return keyPath(c.Dir, m) }, oldKey, newKey, 60*time.Second,
		func(m int) (int, string) {
			cl := c.run(m, file, 2*time.Millisecond, "--timeout", "30s")
			cl.wait()
			return cl.code, cl.out.String()
		})
	if t.Failed() {
		return
	}
	t.Logf("%d tickets taken during the rotation", checkWitness(t, file, 3, nil))
	for m := 1; m <= 3; m++ {
		f := c.frames(m)
		if f["dropped_auth"] != 0 || f["dropped_unsealed"] != 0 || f["accepted"] == 0 {
			t.Errorf("member %d: %v", m, f)
		}
	}
}

// TestKeyNotYetEverywhere: a member given only a new key before the
// others have it cannot take part: the others drop its frames as failing
// authentication.
func TestKeyNotYetEverywhere(t *testing.T) {
	oldKey, newKey := clitest.NewKey(t), clitest.NewKey(t)
	c := startKeyed(t, 3, 3, oldKey)
	c.waitSettled(3)
	before := c.frames(1)["dropped_auth"] + c.frames(2)["dropped_auth"]
	c.Rekey(3, keyPath(c.Dir, 3), newKey)
	clitest.WaitFor(t, 20*time.Second, func() bool {
		return c.frames(1)["dropped_auth"] > before && c.frames(2)["dropped_auth"] > before
	})
}
