package main

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sessionProc is a running `lockd session` driven line by line.
type sessionProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startSession(t *testing.T, sock string) *sessionProc {
	t.Helper()
	s := &sessionProc{t: t, cmd: exec.Command(lockdBin, "session", "--socket", sock), lines: make(chan string, 16)}
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	return s
}

func (s *sessionProc) send(cmd string) {
	s.t.Helper()
	if _, err := fmt.Fprintln(s.in, cmd); err != nil {
		s.t.Fatal(err)
	}
}

// answer is the next line, within 10 s.
func (s *sessionProc) answer() string {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			s.t.Fatal("the session ended")
		}
		return l
	case <-time.After(10 * time.Second):
		s.t.Fatal("no answer within 10s")
	}
	return ""
}

// next is the next line, or "" if none comes within 10 s (for goroutines
// other than the test's, which must not call Fatal).
func (s *sessionProc) next() string {
	select {
	case l := <-s.lines:
		return l
	case <-time.After(10 * time.Second):
		return ""
	}
}

// acquired: the answer is "acquired NAME token T"; it returns T.
func (s *sessionProc) acquired(name string) uint64 {
	s.t.Helper()
	l := s.answer()
	f := strings.Fields(l)
	if len(f) != 4 || f[0] != "acquired" || f[1] != name || f[2] != "token" {
		s.t.Fatalf("want 'acquired %s token T', got %q", name, l)
	}
	tok, _ := strconv.ParseUint(f[3], 10, 64)
	return tok
}

func (s *sessionProc) expect(prefix string) {
	s.t.Helper()
	if l := s.answer(); !strings.HasPrefix(l, prefix) {
		s.t.Fatalf("want %q..., got %q", prefix, l)
	}
}

// TestSession: two sessions on different daemons take one lock in turns;
// answers come in command order, tokens grow, a waiting acquire is
// granted on the other's release, end of input releases, and a killed
// session's lock is freed by its daemon.
func TestSession(t *testing.T) {
	c := startDaemons(t, 3)
	a, b := startSession(t, c.sock(1)), startSession(t, c.sock(2))
	a.send("acquire L")
	t1 := a.acquired("L")
	a.send("try L") // one answer per command, in order, even for errors
	a.expect("error this session already holds L")
	b.send("try L")
	b.expect("busy L")
	b.send("acquire L 300ms") // gives up, and its request is withdrawn
	b.expect("timeout L")
	b.send("acquire L 1x")
	b.expect("error bad timeout 1x")
	b.send("acquire L") // waits
	a.send("release L")
	a.expect(fmt.Sprintf("released L token %d", t1))
	if t2 := b.acquired("L"); t2 <= t1 {
		t.Fatalf("token went from %d to %d", t1, t2)
	}
	a.send("release L")
	a.expect("error this session does not hold L")
	a.send("frobnicate L")
	a.expect("error unknown command")
	a.send("frobnicate")
	a.expect("error unknown command")
	// End of input: b releases and exits 0; a gets the lock at once.
	b.in.Close()
	if err := b.cmd.Wait(); err != nil {
		t.Fatalf("session at end of input: %v", err)
	}
	a.send("acquire L")
	t3 := a.acquired("L")
	// SIGKILL: the daemon sees the connection close and frees the lock.
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Wait()
	d := startSession(t, c.sock(3))
	d.send("acquire L")
	if t4 := d.acquired("L"); t4 <= t3 {
		t.Fatalf("token went from %d to %d", t3, t4)
	}
	// A signal releases and exits 128+signal.
	d.cmd.Process.Signal(syscall.SIGTERM)
	if d.cmd.Wait(); d.cmd.ProcessState.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Fatalf("session on SIGTERM: exit %d", d.cmd.ProcessState.ExitCode())
	}
	e := startSession(t, c.sock(1))
	e.send("acquire L")
	e.acquired("L")
}

// TestSessionsContend: eight sessions spread over three daemons take one
// lock 15 times each. The test is the critical section: it counts who is
// inside between an "acquired" answer and the "release" it sends, so two
// sessions inside at once, or a token that does not grow, fail the test.
func TestSessionsContend(t *testing.T) {
	c := startDaemons(t, 3)
	var (
		mu     sync.Mutex
		inside int
		last   uint64
		grants int
	)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		s := startSession(t, c.sock(1+i%3))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 15; j++ {
				fmt.Fprintln(s.in, "acquire C")
				l := s.next()
				f := strings.Fields(l)
				if len(f) != 4 || f[0] != "acquired" {
					t.Errorf("session: %q", l)
					return
				}
				tok, _ := strconv.ParseUint(f[3], 10, 64)
				mu.Lock()
				inside++
				if inside > 1 {
					t.Errorf("two sessions inside at once (token %d)", tok)
				}
				if tok <= last {
					t.Errorf("token %d after %d", tok, last)
				}
				last = tok
				grants++
				mu.Unlock()
				time.Sleep(time.Millisecond) // inside: give an overlap a chance to show
				mu.Lock()
				inside--
				mu.Unlock()
				fmt.Fprintln(s.in, "release C")
				if l := s.next(); !strings.HasPrefix(l, "released C") {
					t.Errorf("session: %q", l)
					return
				}
			}
		}()
	}
	wg.Wait()
	if grants != 8*15 {
		t.Fatalf("%d grants, want %d", grants, 8*15)
	}
}
