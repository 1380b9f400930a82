package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
	"github.com/roundtable-go/roundtable/pkg/clockd"
)

// TestNowSocket: a serve node 250 ms ahead and 200 ppm fast, following a
// stratum-1 server on this host, reports through its control socket (mode
// 0600) that it is synchronised at stratum 2 and within 2 ms of the system
// clock (which is what its upstream serves); its reported time never goes
// backwards across reports.
func TestNowSocket(t *testing.T) {
	s1 := startServer(t, "--stratum", "1")
	sock := filepath.Join(t.TempDir(), "cs.sock")
	startServer(t, "--upstream", s1, "--skew", "250ms", "--drift-ppm", "200", "--poll", "100ms", "--socket", sock)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket mode %v, want 0600", fi.Mode().Perm())
	}
	var prev time.Time
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := exec.Command(bin, "now", "--socket", sock, "--json").Output()
		if err != nil {
			t.Fatalf("now --socket: %v", err)
		}
		clitest.CheckJSON(t, "clocksync", out)
		var r clockd.NowReport
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		at, err := time.Parse(time.RFC3339Nano, r.Time)
		if err != nil {
			t.Fatal(err)
		}
		if at.Before(prev) {
			t.Fatalf("the node's time went backwards: %v then %v", prev, at)
		}
		prev = at
		if r.Synced && r.Stratum == 2 && r.Offset > -0.002 && r.Offset < 0.002 {
			text, err := exec.Command(bin, "now", "--socket", sock).Output()
			if err != nil || !strings.HasPrefix(string(text), "now ") || !strings.Contains(string(text), " synced stratum 2 ") {
				t.Fatalf("text form: %v %q", err, text)
			}
			t.Logf("%s", text)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not converged within 30s: %s", out)
		}
		time.Sleep(50 * time.Millisecond) // polling a remote clock's state; the deadline above is the failure bound
	}
}

func TestNowSocketAbsent(t *testing.T) {
	err := exec.Command(bin, "now", "--socket", filepath.Join(t.TempDir(), "none.sock")).Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 69 {
		t.Fatalf("now on a missing socket: %v, want exit 69", err)
	}
}

// TestNowWithoutTarget: now without --socket or --peers says which it needs.
func TestNowWithoutTarget(t *testing.T) {
	out, err := exec.Command(bin, "now").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 64 || !strings.Contains(string(out), "--socket") {
		t.Fatalf("now without arguments: %v, want exit 64 naming --socket\n%s", err, out)
	}
}

// TestFlagsAfterHost: flags may follow HOST:PORT.
func TestFlagsAfterHost(t *testing.T) {
	addr := startServer(t, "--stratum", "2")
	out, err := exec.Command(bin, "query", addr, "--samples", "2").Output()
	if err != nil || strings.Count(string(out), "sample ") != 2 {
		t.Fatalf("query HOST:PORT --samples 2: %v\n%s", err, out)
	}
}

// TestApplyRefusals: --apply never runs without the right to change the
// clock (exit 77, with the reason) and never with a virtual clock's flags
// (exit 64). Neither case touches the system clock.
func TestApplyRefusals(t *testing.T) {
	s1 := startServer(t, "--stratum", "1")
	out, err := exec.Command(bin, "serve", "--bind", "127.0.0.1:0", "--upstream", s1, "--apply", "--skew", "1s").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 64 {
		t.Fatalf("--apply --skew: %v, want exit 64\n%s", err, out)
	}
	out, err = exec.Command(bin, "serve", "--bind", "127.0.0.1:0", "--apply").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 64 {
		t.Fatalf("--apply without --upstream: %v, want exit 64\n%s", err, out)
	}
	// Without CAP_SYS_TIME: as an unprivileged user (when the test runs as
	// root, the child becomes nobody, which drops every capability).
	cmd := exec.Command(bin, "serve", "--bind", "127.0.0.1:0", "--upstream", s1, "--apply")
	if os.Geteuid() == 0 {
		dir, err := os.MkdirTemp("", "clocksync-nobody")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		copyBin := filepath.Join(dir, "clocksync")
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copyBin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(copyBin, cmd.Args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 77 || !strings.Contains(string(out), "CAP_SYS_TIME") {
		t.Fatalf("--apply without privilege: %v, want exit 77 naming CAP_SYS_TIME\n%s", err, out)
	}
}
