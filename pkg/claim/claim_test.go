package claim

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// reply is a fake daemon's reply.
type reply struct {
	Event string `json:"event"`
	Msg   string `json:"msg,omitempty"`
}

// daemon is a fake daemon on a Unix socket: serve gets each connection's
// first request and writes the replies it returns (a status request is
// answered with status). The requests after the first are reported on
// requests when the client closes.
type daemon struct {
	path     string
	requests chan []string
}

func fakeDaemon(t *testing.T, status string, serve func(first string) []reply, closeAfter bool) *daemon {
	t.Helper()
	d := &daemon{path: filepath.Join(t.TempDir(), "d.sock"), requests: make(chan []string, 4)}
	ln, err := net.Listen("unix", d.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				if !sc.Scan() {
					return
				}
				first := sc.Text()
				var rs []reply
				if strings.Contains(first, `"status"`) {
					if status == "" {
						time.Sleep(5 * time.Second) // a daemon that does not answer
						return
					}
					rs = []reply{{Event: "status", Msg: status}}
				} else {
					rs = serve(first)
				}
				enc := json.NewEncoder(c)
				for _, r := range rs {
					enc.Encode(r)
				}
				if closeAfter {
					return
				}
				var got []string
				for sc.Scan() {
					got = append(got, sc.Text())
				}
				d.requests <- got
			}()
		}
	}()
	return d
}

// ask is a tool's Ask against the fake daemon.
func ask(noQuorum bool) Ask[reply, string] {
	return Ask[reply, string]{
		Tool: "faked", Request: map[string]string{"op": "take"}, What: "the thing", Prefix: "thing: ", Decider: "the service",
		Fields:  func(r reply) (string, string, string) { return r.Event, r.Msg, r.Msg },
		Granted: "granted", Busy: "held elsewhere", Unavailable: "cannot decide: ",
		Status: func(socket string, within time.Duration) (string, error) {
			c, err := Dial[reply]("faked", socket)
			if err != nil {
				return "", err
			}
			defer c.Close()
			c.Send(map[string]string{"op": "status"})
			select {
			case r, ok := <-c.Replies():
				if ok {
					return r.Msg, nil
				}
			case <-time.After(within):
			}
			return "", errors.New("no answer")
		},
		Describe: func(st string, err error) string {
			if err != nil {
				return "the daemon does not answer"
			}
			return "the daemon says " + st
		},
		NoQuorum: func(st string) bool { return noQuorum && st == "no quorum" },
	}
}

func answer(rs ...reply) func(string) []reply { return func(string) []reply { return rs } }

// TestTakeAnswers: each answer to the request ends the wait with its exit
// code; a pending event does not.
func TestTakeAnswers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rs    []reply
		close bool
		code  int
		msg   string
	}{
		{"granted after a pending event", []reply{{Event: "queued"}, {Event: "granted"}}, false, 0, ""},
		{"busy: the conflict code", []reply{{Event: "busy"}}, false, 99, "held elsewhere"},
		{"unavailable", []reply{{Event: "unavailable", Msg: "no quorum"}}, false, cli.ExitUnavailable, "cannot decide: no quorum"},
		{"refused", []reply{{Event: "error", Msg: "bad name"}}, false, cli.ExitUsage, "bad name"},
		{"the daemon hangs up", nil, true, cli.ExitUnavailable, "closed the connection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fakeDaemon(t, "idle", answer(tc.rs...), tc.close)
			c, got, _, err := Take(WaitOpts{Socket: d.path, Conflict: 99, Quiet: true}, ask(false))
			if cli.Code(err) != tc.code || err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Take: %v (code %d), want code %d and %q", err, cli.Code(err), tc.code, tc.msg)
			}
			if err == nil {
				if got.Event != "granted" {
					t.Errorf("Take returned %+v, not the grant", got)
				}
				c.Close()
			}
		})
	}
}

// TestTakeNoDaemon: nobody serves the socket: 69.
func TestTakeNoDaemon(t *testing.T) {
	_, _, _, err := Take(WaitOpts{Socket: filepath.Join(t.TempDir(), "none.sock")}, ask(false))
	if cli.Code(err) != cli.ExitUnavailable {
		t.Fatalf("Take without a daemon: %v (code %d), want 69", err, cli.Code(err))
	}
}

// TestTakeTimesOut: a wait that ends at --timeout exits with the conflict
// code, saying what the daemon knows; 69 when the status shows a service
// that cannot decide or the daemon does not answer; with --nonblock and
// no answer, 69 after cli.NonBlockLimit.
func TestTakeTimesOut(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   string
		noQuorum bool
		nonblock bool
		timeout  time.Duration
		code     int
		msg      string
	}{
		{"busy service", "held by 3", false, false, 50 * time.Millisecond, 99, "timed out after"},
		{"no quorum", "no quorum", true, false, 50 * time.Millisecond, cli.ExitUnavailable, "waiting for the thing: the daemon says no quorum"},
		{"silent daemon", "", false, false, 50 * time.Millisecond, cli.ExitUnavailable, "the daemon does not answer"},
		{"nonblock, silent daemon", "", false, true, 0, cli.ExitUnavailable, "thing: no answer within 1s"},
		{"nonblock, no decision", "held by 3", false, true, 0, cli.ExitUnavailable, "thing: the service did not decide within 1s: the daemon says held by 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fakeDaemon(t, tc.status, answer(), false)
			_, _, _, err := Take(WaitOpts{Socket: d.path, Conflict: 99, Timeout: tc.timeout, NonBlock: tc.nonblock, Quiet: true}, ask(tc.noQuorum))
			if cli.Code(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Take: %v (code %d), want code %d and %q", err, cli.Code(err), tc.code, tc.msg)
			}
		})
	}
}

// lease runs out at until.
type lease time.Time

func (l lease) Overdue() bool { return time.Now().After(time.Time(l)) }

// keepFor is a Keep whose lease is lost on a "lost" reply, or overdue
// once until has passed.
func keepFor(until time.Time) Keep[reply] {
	return Keep[reply]{
		Reply: func(r reply) (string, bool) { return r.Msg, r.Event == "lost" },
		Lease: lease(until), Expired: "lease over",
	}
}

// TestRun: a command that exits under its grant gives the grant back and
// its exit code is the result; a grant lost while it runs stops it and
// exits 76, whether the daemon says so, the lease runs out or the daemon
// goes away.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rs    []reply
		close bool
		until time.Duration
		args  []string
		code  int
	}{
		{"the command's exit code", []reply{{Event: "granted"}}, false, time.Minute, []string{"sh", "-c", "exit 3"}, 3},
		{"lost by the daemon's word", []reply{{Event: "granted"}, {Event: "lost", Msg: "revoked"}}, false, time.Minute, []string{"sleep", "30"}, cli.ExitLost},
		{"lease run out", []reply{{Event: "granted"}}, false, 100 * time.Millisecond, []string{"sleep", "30"}, cli.ExitLost},
		{"daemon gone", []reply{{Event: "granted"}}, true, time.Minute, []string{"sleep", "30"}, cli.ExitLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fakeDaemon(t, "idle", answer(tc.rs...), tc.close)
			c, _, sigs, err := Take(WaitOpts{Socket: d.path, Quiet: true}, ask(false))
			if err != nil {
				t.Fatal(err)
			}
			child, err := cli.StartChild(tc.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = c.Run(keepFor(time.Now().Add(tc.until)), sigs, child, time.Second, "faked", "thing 1", map[string]string{"op": "release"})
			c.Close()
			if cli.Code(err) != tc.code {
				t.Fatalf("Run: %v (code %d), want %d", err, cli.Code(err), tc.code)
			}
			if time.Since(start) > 20*time.Second {
				t.Fatal("the command was not stopped")
			}
			if tc.close {
				return
			}
			got := <-d.requests
			released := len(got) == 1 && got[0] == `{"op":"release"}`
			if released != (tc.code == 3) {
				t.Errorf("after %s the daemon read %q", tc.name, got)
			}
		})
	}
}

// TestHold: the end of standard input gives the grant back; a lost grant
// is reported and exits 76.
func TestHold(t *testing.T) {
	for _, lost := range []bool{false, true} {
		rs := []reply{{Event: "granted"}}
		if lost {
			rs = append(rs, reply{Event: "lost", Msg: "revoked"})
		}
		d := fakeDaemon(t, "idle", answer(rs...), false)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stdin := os.Stdin
		os.Stdin = r
		if !lost {
			w.Close()
		}
		c, _, sigs, err := Take(WaitOpts{Socket: d.path, Quiet: true}, ask(false))
		if err != nil {
			t.Fatal(err)
		}
		var said []string
		err = c.Hold(keepFor(time.Now().Add(time.Minute)), sigs, "thing 1", map[string]string{"op": "release"},
			func(why string) { said = append(said, "lost "+why) }, func() { said = append(said, "released") })
		c.Close()
		os.Stdin = stdin
		w.Close()
		r.Close()
		want, code := "released", 0
		if lost {
			want, code = "lost revoked", cli.ExitLost
		}
		if cli.Code(err) != code || len(said) != 1 || said[0] != want {
			t.Errorf("Hold (lost %v): %v (code %d), said %q; want code %d and %q", lost, err, cli.Code(err), said, code, want)
		}
		if got := <-d.requests; (len(got) == 1 && got[0] == `{"op":"release"}`) == lost {
			t.Errorf("Hold (lost %v): the daemon read %q", lost, got)
		}
	}
}

// TestCommand: the command after an optional "--", through sh -c with
// shell; none is a usage error.
func TestCommand(t *testing.T) {
	if got, err := Command([]string{"--", "echo", "hi"}, false, "x"); err != nil || strings.Join(got, " ") != "echo hi" {
		t.Errorf("Command: %q %v", got, err)
	}
	if got, err := Command([]string{"echo", "$X"}, true, "x"); err != nil || strings.Join(got, "|") != "/bin/sh|-c|echo $X" {
		t.Errorf("Command with shell: %q %v", got, err)
	}
	if _, err := Command([]string{"--"}, false, "tool run -- cmd"); cli.Code(err) != cli.ExitUsage || !strings.Contains(err.Error(), "no command: tool run -- cmd") {
		t.Errorf("Command without a command: %v", err)
	}
}
