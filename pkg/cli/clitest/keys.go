package clitest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
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
