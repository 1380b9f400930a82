package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestSystemdNotify: under a service manager (NOTIFY_SOCKET), lockd serve
// says READY=1, pings the watchdog at half of WATCHDOG_USEC from its
// driver's loop, and says STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", dir)
	clitest.CheckNotify(t, 20*time.Second, 600*time.Millisecond, 4, nil, lockdBin, "serve", "--id", "1",
		"--peers", "1="+clitest.FreeAddr(t), "--socket", filepath.Join(dir, "1.sock"))
}

// serveLog runs lockd serve with args until it is ready, stops it with
// SIGTERM and returns its stderr.
func serveLog(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	cmd := exec.Command(lockdBin, append([]string{"serve", "--id", "1", "--peers", "1=" + clitest.FreeAddr(t),
		"--socket", filepath.Join(dir, "1.sock"), "--state-file", filepath.Join(dir, "state"), "--ready-file", ready}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	clitest.WaitFor(t, 20*time.Second, func() bool { _, err := os.Stat(ready); return err == nil })
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	return stderr.String()
}

// TestLogFormatJSONLines: with --log-format json every line a real daemon
// writes on stderr is a JSON object naming the tool and the member, the
// no-key warning and a usage error's message included; --insecure on loopback leaves the warning out;
// text lines on a pipe start with the time.
func TestLogFormatJSONLines(t *testing.T) {
	for _, insecure := range []bool{false, true} {
		args := []string{"--log-format", "json"}
		if insecure {
			args = append(args, "--insecure")
		}
		out := serveLog(t, args...)
		var msgs []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var rec struct {
				Time, Level, Msg, Tool string
				Member                 int
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Time == "" || rec.Level == "" || rec.Tool != "lockd" || rec.Member != 1 {
				t.Errorf("not a JSON log record of member 1 of lockd: %q (%v)", line, err)
			}
			msgs = append(msgs, rec.Msg)
		}
		warned := slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "NOT authenticated") })
		if warned == insecure || !slices.Contains(msgs, "started") {
			t.Errorf("--insecure=%v: messages %q; want \"started\", and the no-key warning only without --insecure", insecure, msgs)
		}
	}
	// The last word of a failing command is a JSON record too.
	code, stderr, _ := clitest.RunFor(20*time.Second, lockdBin, "serve", "--log-format", "json", "--id", "1", "--peers", "1=bad")
	var rec struct {
		Level, Msg, Tool string
		Exit             int
	}
	if err := json.Unmarshal([]byte(stderr), &rec); err != nil || code != 64 || rec.Level != "ERROR" || rec.Exit != 64 || !strings.Contains(rec.Msg, "host:port") {
		t.Errorf("usage error with --log-format json: exit %d, stderr %q (%v)", code, stderr, err)
	}
	out := serveLog(t)
	if !regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\S* INFO lockd: started `).MatchString(out) {
		t.Errorf("text log on a pipe without a timestamp:\n%s", out)
	}
}

// TestSystemdReadyAtQuorum: READY=1 waits for a quorum, not for the
// socket. Member 1 of three, alone, listens (its --ready-file is written)
// but cannot grant, and says nothing ready however long it waits; once
// member 2 runs, the two elect a coordinator and READY=1 follows.
func TestSystemdReadyAtQuorum(t *testing.T) {
	dir := t.TempDir()
	peers := "1=" + clitest.FreeAddr(t) + ",2=" + clitest.FreeAddr(t) + ",3=" + clitest.FreeAddr(t)
	ns := clitest.NewNotifySocket(t)
	start := func(id string, env []string) *exec.Cmd {
		cmd := exec.Command(lockdBin, "serve", "--id", id, "--peers", peers, "--insecure",
			"--socket", filepath.Join(dir, id+".sock"), "--ready-file", filepath.Join(dir, id+".ready"))
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	start("1", ns.Env(0))
	clitest.WaitFor(t, 20*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "1.ready")); return err == nil })
	// Alone, member 1 can never have a quorum: any wait is a fair test;
	// five election timeouts give an eager READY=1 time to show.
	time.Sleep(time.Second)
	if ns.Saw("READY=1") {
		t.Fatal("READY=1 from a member without a quorum")
	}
	start("2", os.Environ())
	m := ns.Await(t, 20*time.Second, "READY=1")
	if !strings.Contains(m.Text, "quorum") {
		t.Errorf("READY=1 without saying why: %q", m.Text)
	}
}
