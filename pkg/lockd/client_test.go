package lockd

import (
	"bufio"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/claim"
	"github.com/roundtable-go/roundtable/pkg/cli"
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
			lines := `{"event":"acquired","name":"db","token":42,"until_ns":` + strconv.FormatInt(until, 10) + "}\n" +
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
// its exit code and releases.
func TestRunSupervises(t *testing.T) {
	path, requests := fakeDaemon(t)
	err := Run(claim.RunOpts{WaitOpts: claim.WaitOpts{Socket: path, Conflict: cli.ExitBusy}, KillGrace: time.Second,
		Args: []string{"db", "--", "sh", "-c", `test "$LOCKD_NAME $LOCKD_TOKEN" = "db 42" && exit 4`}})
	if cli.Code(err) != 4 {
		t.Fatalf("Run returned %v (code %d), want the command's exit code 4", err, cli.Code(err))
	}
	got := <-requests
	if len(got) != 2 || !strings.Contains(got[0], `"op":"acquire"`) || got[1] != `{"op":"release","name":"db"}` {
		t.Fatalf("the daemon read %q", got)
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
		c.Write([]byte(`{"event":"acquired","name":"db","token":1,"until_ns":` + strconv.FormatInt(time.Now().Add(time.Minute).UnixNano(), 10) + "}\n"))
		c.Close()
	}()
	start := time.Now()
	err = Run(claim.RunOpts{WaitOpts: claim.WaitOpts{Socket: path}, KillGrace: 5 * time.Second, Args: []string{"db", "sleep", "30"}})
	if cli.Code(err) != cli.ExitLost {
		t.Fatalf("Run returned %v (code %d), want %d", err, cli.Code(err), cli.ExitLost)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("the command was not stopped when the daemon went away")
	}
}
