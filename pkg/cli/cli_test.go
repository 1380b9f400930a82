package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParsePeers(t *testing.T) {
	p, err := ParsePeers("1=127.0.0.1:7001, 2=127.0.0.1:7002")
	if err != nil || len(p) != 2 || p[2] != "127.0.0.1:7002" {
		t.Fatalf("%v %v", p, err)
	}
	file := filepath.Join(t.TempDir(), "peers")
	os.WriteFile(file, []byte("# members\n1=h1:1\n3=h3:3 # third\n"), 0o644)
	if p, err := ParsePeers("@" + file); err != nil || len(p) != 2 || p[3] != "h3:3" {
		t.Fatalf("file: %v %v", p, err)
	}
	if p, err := ParsePeers("@../../testdata/peers-5.txt"); err != nil || len(p) != 5 || p[5] != "127.0.0.1:7005" {
		t.Fatalf("testdata: %v %v", p, err)
	}
	for _, bad := range []string{"", "1", "0=h:1", "x=h:1", "1=h", "1=h:1,1=h:2", "1=h:1,2=h:1", "@/nonexistent"} {
		if _, err := ParsePeers(bad); err == nil {
			t.Errorf("ParsePeers(%q) accepted", bad)
		}
	}
}

func TestEnvName(t *testing.T) {
	if got := Env("elect", "key-file"); got != "ELECT_KEY_FILE" {
		t.Fatal(got)
	}
}

func TestResolveBind(t *testing.T) {
	if got, err := ResolveBind("127.0.0.1:7000"); err != nil || got != "127.0.0.1:7000" {
		t.Fatal(got, err)
	}
	tmpl := `{{ GetAllInterfaces | include "flags" "loopback" | include "type" "IPv4" | limit 1 | attr "address" }}:7000`
	if got, err := ResolveBind(tmpl); err != nil || got != "127.0.0.1:7000" {
		t.Fatal(got, err)
	}
	if _, err := ResolveBind("{{ nonsense }}"); err == nil {
		t.Fatal("bad template accepted")
	}
}

func TestChildExitCodes(t *testing.T) {
	c, err := StartChild([]string{"sh", "-c", "exit 3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if c.ExitCode() != 3 {
		t.Fatalf("exit code %d", c.ExitCode())
	}
	if _, err := StartChild([]string{"no-such-command-xyz"}, nil); Code(err) != ExitNotFound {
		t.Fatalf("missing command: %v (code %d)", err, Code(err))
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "noexec"), []byte("#!/bin/sh\n"), 0o644)
	if _, err := StartChild([]string{filepath.Join(dir, "noexec")}, nil); Code(err) != ExitCannotExec {
		t.Fatalf("non-executable: %v (code %d)", err, Code(err))
	}
}

func TestChildStopEscalates(t *testing.T) {
	// A child that ignores SIGTERM is killed after the grace period.
	ready := filepath.Join(t.TempDir(), "ready")
	c, err := StartChild([]string{"sh", "-c", "trap '' TERM; touch " + ready + "; while :; do sleep 0.05; done"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := os.Stat(ready); err != nil; _, err = os.Stat(ready) {
		time.Sleep(5 * time.Millisecond) // polling for the child's own signal, not a timing guess
	}
	start := time.Now()
	c.Stop(200 * time.Millisecond)
	if c.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit code %d, want %d", c.ExitCode(), 128+int(syscall.SIGKILL))
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Fatal("SIGKILL before the grace period")
	}
	// A cooperative child exits on SIGTERM with 128+15.
	c, _ = StartChild([]string{"sleep", "10"}, []string{"X=1"})
	c.Stop(5 * time.Second)
	if c.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit code %d", c.ExitCode())
	}
}

func TestOutputJSON(t *testing.T) {
	var b strings.Builder
	o := NewOutput(&b, true)
	o.JSON(map[string]int{"a": 1})
	if b.String() != "{\"a\":1}\n" {
		t.Fatalf("%q", b.String())
	}
}
