package clitest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NewKey returns a fresh random key as a key file line (64 hex characters).
func NewKey(t testing.TB) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// WriteKeys replaces the key file at path with keys, one per line, the
// sealing key first; the file is renamed into place, so a member that
// re-reads it sees the old or the new file, never a part.
func WriteKeys(t testing.TB, path string, keys ...string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte("# written by the test\n"+strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Reloads counts the "key file reloaded" lines in member i's log.
func (c *Cluster) Reloads(i int) int {
	b, _ := os.ReadFile(c.File(i, "log"))
	return strings.Count(string(b), "key file reloaded")
}

// Rekey writes keys into member i's key file (path), sends the member
// SIGHUP and waits until its log says it re-read the file.
func (c *Cluster) Rekey(i int, path string, keys ...string) {
	c.T.Helper()
	WriteKeys(c.T, path, keys...)
	before := c.Reloads(i)
	c.Hangup(i)
	WaitFor(c.T, 20*time.Second, func() bool { return c.Reloads(i) > before })
}

// Hangup sends member i SIGHUP.
func (c *Cluster) Hangup(i int) {
	c.T.Helper()
	b, err := os.ReadFile(c.File(i, "pid"))
	if err != nil {
		c.T.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		c.T.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		c.T.Fatalf("SIGHUP to member %d: %v", i, err)
	}
}

// RotateUnderLoad changes the key of members 1..n from oldKey to newKey
// by the three steps of docs/design.md ("Changing the key"), member by
// member, while one client loop per member runs (run(m) runs one client
// through member m and returns its exit code and output; at most 2000
// runs per loop). After each member's reload it waits until a few more
// clients were granted, so the load runs in every state of the rotation,
// mixed ones included; a client that fails fails the test. wait bounds
// each of those waits.
func RotateUnderLoad(t *testing.T, c *Cluster, n int, keyPath func(m int) string, oldKey, newKey string,
	wait time.Duration, run func(m int) (code int, out string)) {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	runs := 0
	for m := 1; m <= n; m++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				select {
				case <-stop:
					return
				default:
				}
				if code, out := run(m); code != 0 {
					t.Errorf("client through member %d: exit %d\n%s", m, code, out)
					return
				}
				mu.Lock()
				runs++
				mu.Unlock()
			}
		}()
	}
	granted := func() {
		t.Helper()
		mu.Lock()
		from := runs
		mu.Unlock()
		WaitFor(t, wait, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return runs >= from+3 || t.Failed()
		})
	}
	granted()
	for _, step := range [][]string{{oldKey, newKey}, {newKey, oldKey}, {newKey}} {
		for m := 1; m <= n; m++ {
			c.Rekey(m, keyPath(m), step...)
			granted()
		}
	}
	close(stop)
	wg.Wait()
}
