package ctl

import (
	"bufio"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/proc"
)

// fakeDaemon serves one `lockd run` on a Unix socket: it grants the first
// request, writing the grant and an extension split across three writes,
// and reports the requests it read until the client closed.
func fakeDaemon(t *testing.T) (path string, requests <-chan []string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan []string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		sc := bufio.NewScanner(c)
		var got []string
		if sc.Scan() {
			got = append(got, sc.Text())
			until := time.Now().Add(time.Minute).UnixNano()
			lines := `{"event":"acquired","name":"db","token":42,"ms":60000}` + "\n" +
				`{"event":"valid","name":"db","until_ns":` + strconv.FormatInt(until, 10) + "}\n"
			for _, part := range []string{lines[:10], lines[10:70], lines[70:]} {
				c.Write([]byte(part))
				time.Sleep(time.Millisecond) // separate reads, not a timing assumption: any split must parse
			}
		}
		for sc.Scan() {
			got = append(got, sc.Text())
		}
		out <- got
	}()
	return path, out
}

// TestRunSupervises: Run acquires, runs the command with the token, returns
// its exit code and releases, with the command watched through its pidfd
// and, as on kernels without pidfds, through a goroutine in wait4.
func TestRunSupervises(t *testing.T) {
	for _, pidfd := range []bool{true, false} {
		if !pidfd {
			spawn = func(args, env []string) (int, int, error) {
				pid, fd, err := proc.Spawn(args, env)
				if fd >= 0 {
					syscall.Close(fd)
				}
				return pid, -1, err
			}
		}
		path, requests := fakeDaemon(t)
		err := Run(RunOpts{WaitOpts: WaitOpts{Socket: path, Conflict: proc.ExitBusy}, KillGrace: time.Second,
			Args: []string{"db", "--", "sh", "-c", `test "$LOCKD_NAME $LOCKD_TOKEN" = "db 42" && exit 4`}})
		spawn = proc.Spawn
		if proc.Code(err) != 4 {
			t.Fatalf("pidfd %v: Run returned %v (code %d), want the command's exit code 4", pidfd, err, proc.Code(err))
		}
		got := <-requests
		if len(got) != 2 || !strings.Contains(got[0], `"op":"acquire"`) || got[1] != `{"op":"release","name":"db"}` {
			t.Fatalf("pidfd %v: the daemon read %q", pidfd, got)
		}
	}
}

// TestRunDaemonGone: when the daemon closes the connection while the
// command runs, the command is stopped (SIGTERM) and Run returns 76.
func TestRunDaemonGone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		bufio.NewReader(c).ReadString('\n')
		c.Write([]byte(`{"event":"acquired","name":"db","token":1,"ms":60000}` + "\n"))
		c.Close()
	}()
	start := time.Now()
	err = Run(RunOpts{WaitOpts: WaitOpts{Socket: path}, KillGrace: 5 * time.Second, Args: []string{"db", "sleep", "30"}})
	if proc.Code(err) != proc.ExitLost {
		t.Fatalf("Run returned %v (code %d), want %d", err, proc.Code(err), proc.ExitLost)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("the command was not stopped when the daemon went away")
	}
}
