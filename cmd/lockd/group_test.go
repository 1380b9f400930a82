package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestBackgroundJobEndsWithRun: SIGINT to `lockd run -- sh -c 'sleep 30 &
// wait'` ends the shell, and the background sleep (which a non-interactive
// shell starts with SIGINT ignored) is gone by the time lockd run exits,
// before the lock is given back; so is a job left behind by a command
// that exits by itself.
func TestBackgroundJobEndsWithRun(t *testing.T) {
	c := startDaemons(t, 1)
	for _, tc := range []struct{ name, script string }{
		{"sigint", `sleep 30 & echo $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`},
		{"exit", `sleep 30 & echo $! > "$0.tmp" && mv "$0.tmp" "$0"; while [ -e "$0" ]; do sleep 0.01; done`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "job")
			cmd := exec.Command(lockdBin, "run", "--socket", c.sock(1), "--kill-grace", "2s", "L", "--", "sh", "-c", tc.script, pidFile)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			job := clitest.WaitPID(t, 20*time.Second, pidFile)
			t.Cleanup(func() { syscall.Kill(job, syscall.SIGKILL) })
			if tc.name == "sigint" {
				cmd.Process.Signal(syscall.SIGINT)
			} else {
				os.Remove(pidFile)
			}
			err := cmd.Wait()
			if !clitest.Gone(job) {
				t.Fatalf("the background job %d outlived lockd run (%v): %s", job, err, stderr.String())
			}
			if tc.name == "sigint" && exitCode(err) != 128+int(syscall.SIGINT) {
				t.Errorf("lockd run after SIGINT: exit %d, want %d: %s", exitCode(err), 128+int(syscall.SIGINT), stderr.String())
			}
		})
	}
}
