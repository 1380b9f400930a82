package main

// Multi-process tests of the pipe around the protocols: a reader of
// stdout that stops, lines at the size limit, bytes kept as they are.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
	"github.com/roundtable-go/roundtable/pkg/mcast"
)

// pipedMember is one 'mcast run --json' process whose stdin is a file
// and whose stdout goes through a pipe to a cat process writing the log:
// stopping the cat stops the member's reader.
type pipedMember struct {
	id        int
	peers     string
	log, errf string
	cmd, cat  *exec.Cmd
	done      chan error
	exited    *int
}

// startPiped starts members 1..n of a group with args; member i reads
// inputs[i-1] (a file), or when that is "" a pipe the test writes to
// (stdin[i-1]) and closeInput closes.
func startPiped(t *testing.T, dir string, n int, inputs []string, args ...string) (ms []*pipedMember, stdin []*os.File, closeInput func()) {
	t.Helper()
	var peers []string
	for i, a := range freePorts(t, n) {
		peers = append(peers, fmt.Sprintf("%d=%s", i+1, a))
	}
	stdin = make([]*os.File, n)
	closeInput = func() {
		for _, f := range stdin {
			if f != nil {
				f.Close()
			}
		}
	}
	t.Cleanup(closeInput)
	for i := 1; i <= n; i++ {
		m := &pipedMember{id: i, peers: strings.Join(peers, ","), log: filepath.Join(dir, fmt.Sprintf("%d.log", i)), errf: filepath.Join(dir, fmt.Sprintf("%d.err", i)),
			done: make(chan error, 1)}
		m.cmd = exec.Command(mcastBin, append([]string{"run", "--id", fmt.Sprint(i), "--peers", strings.Join(peers, ","),
			"--json", "--no-color", "--log-level", "warn"}, args...)...)
		if inputs[i-1] == "" {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			m.cmd.Stdin = r
			stdin[i-1] = w
			defer r.Close()
		} else {
			in, err := os.Open(inputs[i-1])
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			m.cmd.Stdin = in
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(m.log)
		if err != nil {
			t.Fatal(err)
		}
		m.cat = exec.Command("cat")
		m.cat.Stdin, m.cat.Stdout = pr, out
		if err := m.cat.Start(); err != nil {
			t.Fatal(err)
		}
		stderr, _ := os.Create(m.errf)
		m.cmd.Stdout, m.cmd.Stderr = pw, stderr
		if err := m.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pr.Close()
		pw.Close()
		go func() {
			err := m.cmd.Wait()
			m.cat.Process.Signal(syscall.SIGCONT)
			m.cat.Wait()
			out.Close()
			stderr.Close()
			m.done <- err
		}()
		t.Cleanup(func() {
			m.cmd.Process.Kill()
			m.cat.Process.Signal(syscall.SIGCONT)
			m.cat.Process.Kill()
			if t.Failed() {
				b, _ := os.ReadFile(m.errf)
				t.Logf("member %d stderr:\n%s", m.id, b)
			}
		})
		ms = append(ms, m)
	}
	return ms, stdin, closeInput
}

// status is what 'mcast status' says of m's group.
func (m *pipedMember) status() string {
	out, _ := exec.Command(mcastBin, "status", "--peers", m.peers).CombinedOutput()
	return string(out)
}

// wait returns the member's exit code (-1: still running at the limit).
func (m *pipedMember) wait(limit time.Duration) int {
	if m.exited != nil {
		return *m.exited
	}
	select {
	case err := <-m.done:
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -2
		}
		m.exited = &code
		return code
	case <-time.After(limit):
		return -1
	}
}

// count counts the log's lines with s.
func count(t *testing.T, file, s string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte(s))
}

// senderLines is n lines of about size bytes for member id, and the
// offset where line cut+1 starts.
func senderLines(id, n, size, cut int) (all []byte, at int) {
	var b bytes.Buffer
	pad := strings.Repeat("x", size)
	for k := 1; k <= n; k++ {
		fmt.Fprintf(&b, "m%d-%d %s\n", id, k, pad)
		if k == cut {
			at = b.Len()
		}
	}
	return b.Bytes(), at
}

// TestSlowReader: members 1 and 2 send 8,000 lines of 500 bytes each
// (more than a member may hold undelivered: the group must slow down);
// member 3's reader of stdout is stopped for 3 s, then 10 s, mid-stream.
// Every member that stays delivers every line, and the logs pass 'mcast
// check'; with --stall-timeout shorter than the pause, member 3 instead
// exits 76 saying what it did not write, and the others finish without
// it.
func TestSlowReader(t *testing.T) {
	cases := []struct {
		order string
		args  []string
		pause time.Duration
		stall string
	}{
		{"fifo", nil, 3 * time.Second, ""},
		{"causal", nil, 3 * time.Second, ""},
		{"total", []string{"--total", "sequencer"}, 3 * time.Second, ""},
		{"fifo", nil, 10 * time.Second, ""},
		{"causal", nil, 10 * time.Second, ""},
		{"total", []string{"--total", "sequencer"}, 10 * time.Second, ""},
		{"fifo", nil, 10 * time.Second, "2s"},
		{"total", []string{"--total", "sequencer"}, 10 * time.Second, "2s"},
	}
	const perSender, size = 8000, 500
	for _, c := range cases {
		name := fmt.Sprintf("%s/%v", c.order, c.pause)
		if c.stall != "" {
			name += "/stall-" + c.stall
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			// The senders read pipes the test writes: the first lines
			// before member 3's reader stops, the rest after, so lines
			// are still coming while it is stopped however fast or slow
			// this host is.
			inputs := []string{"", "", ""}
			args := append([]string{"--order", c.order}, c.args...)
			if c.stall != "" {
				args = append(args, "--stall-timeout", c.stall)
			}
			group := c.order == "total"
			if !group {
				// Member 3 sends nothing; its input ends at once and it
				// stays until everyone has everything.
				inputs[2] = filepath.Join(dir, "empty")
				os.WriteFile(inputs[2], nil, 0o644)
			}
			ms, stdin, closeInput := startPiped(t, dir, 3, inputs, args...)
			const before = 300 // lines per sender before the reader stops
			rest := make(chan struct{})
			for i := range 2 {
				w := stdin[i]
				lines, cut := senderLines(i+1, perSender, size, before)
				go func() {
					w.Write(lines[:cut])
					<-rest
					w.Write(lines[cut:])
					w.Close()
				}()
			}
			// Stop member 3's reader once lines flow, then send the rest.
			clitest.WaitFor(t, 60*time.Second, func() bool { return count(t, ms[2].log, `"deliver"`) >= before })
			ms[2].cat.Process.Signal(syscall.SIGSTOP)
			stopped := time.Now()
			close(rest)
			// 'mcast run' keeps going meanwhile: it must not exit or be
			// left behind while its reader is stopped.
			time.Sleep(c.pause) // the pause under test, not a wait for an event
			ms[2].cat.Process.Signal(syscall.SIGCONT)
			t.Logf("reader stopped for %v", time.Since(stopped).Round(time.Millisecond))
			if c.stall != "" {
				if code := ms[2].wait(30 * time.Second); code != 76 {
					t.Fatalf("member 3 exited %d, want 76 after stdout was blocked past --stall-timeout", code)
				}
				b, _ := os.ReadFile(ms[2].errf)
				if !strings.Contains(string(b), "stdout blocked") || !strings.Contains(string(b), "not written") {
					t.Fatalf("member 3 does not say what it missed:\n%s", b)
				}
			} else if group {
				// Member 3 leaves once the others have.
				for _, m := range ms[:2] {
					if code := m.wait(60 * time.Second); code != 0 {
						t.Fatalf("member %d exited %d\n%s", m.id, code, m.status())
					}
				}
				closeInput()
			}
			for _, m := range ms {
				if c.stall != "" && m.id == 3 {
					continue
				}
				if code := m.wait(60 * time.Second); code != 0 {
					t.Fatalf("member %d exited %d\n%s", m.id, code, m.status())
				}
			}
			var logs []string
			for _, m := range ms {
				logs = append(logs, m.log)
			}
			out, err := exec.Command(mcastBin, append([]string{"check", "--order", c.order}, logs...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("mcast check: %v\n%s", err, out)
			}
			t.Log(strings.TrimSpace(string(out)))
			for _, m := range ms {
				if c.stall != "" && m.id == 3 {
					continue
				}
				// Every line of both senders: sends (fixed group, own
				// lines) and deliveries.
				got := count(t, m.log, `"deliver"`) + count(t, m.log, `"send"`)
				if group {
					if m.id != 3 {
						continue // a sender leaves when its input ends
					}
					got = count(t, m.log, `"deliver"`)
				}
				if got != 2*perSender {
					t.Fatalf("member %d has %d of %d lines", m.id, got, 2*perSender)
				}
			}
		})
	}
}

// TestStalledMemberQuits: in a view of two, the member whose reader
// stays stopped past --stall-timeout quits (exit 76) and tells the other,
// which then goes on alone and finishes (exit 0): a crash in a view of
// two would leave it a minority, waiting for ever.
func TestStalledMemberQuits(t *testing.T) {
	dir := t.TempDir()
	ms, stdin, _ := startPiped(t, dir, 2, []string{"", ""}, "--order", "total", "--stall-timeout", "1s")
	lines, cut := senderLines(1, 4000, 500, 100)
	go func() { stdin[0].Write(lines[:cut]) }()
	clitest.WaitFor(t, 60*time.Second, func() bool { return count(t, ms[1].log, `"deliver"`) >= 100 })
	ms[1].cat.Process.Signal(syscall.SIGSTOP)
	stdin[0].Write(lines[cut:]) // blocks while the group waits for member 2's reader
	if code := ms[1].wait(60 * time.Second); code != 76 {
		t.Fatalf("member 2 exited %d, want 76", code)
	}
	ms[1].cat.Process.Signal(syscall.SIGCONT)
	stdin[0].Close()
	if code := ms[0].wait(60 * time.Second); code != 0 {
		t.Fatalf("member 1 exited %d after member 2 quit, want 0 (it is alone, not a minority)\n%s", code, ms[0].status())
	}
	if n := count(t, ms[0].log, `"deliver"`); n != 4000 {
		t.Fatalf("member 1 delivered %d of its 4000 lines", n)
	}
}

// TestLineAtLimit: a line of exactly the documented limit is delivered
// in every order (a key's seal included); one byte more is exit 64 with
// the line named, nothing of it sent.
func TestLineAtLimit(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, bytes.Repeat([]byte("k"), 32), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		order string
		args  []string
		limit int
	}{
		{"fifo", nil, mcast.MaxPayload},
		{"unordered", nil, mcast.MaxPayload},
		{"causal", nil, mcast.PayloadLimit(mcast.Causal, 2)},
		{"total", []string{"--total", "sequencer"}, mcast.MaxPayload},
		{"total", []string{"--total", "lamport"}, mcast.MaxPayload},
		{"total", []string{"--total", "isis"}, mcast.MaxPayload},
		{"total", []string{"--total", "totem"}, mcast.MaxPayload},
	} {
		t.Run(strings.Join(append([]string{c.order}, c.args...), " "), func(t *testing.T) {
			big := strings.Repeat("y", c.limit-1)
			args := append([]string{"--order", c.order, "--key-file", key}, c.args...)
			ms, stdin, closeInput := startPiped(t, dir, 2, []string{"", ""}, args...)
			for i, w := range stdin {
				fmt.Fprintf(w, "a%d\n%d%s\nb%d\n", i+1, i+1, big, i+1)
			}
			// Both lines at the limit reach both members, and the lines
			// after them too: as a send or a delivery in a fixed group;
			// in a dynamic group a member's own lines are logged as sent
			// and as delivered.
			want := 2
			if c.order == "total" {
				want = 3
			}
			clitest.WaitFor(t, 30*time.Second, func() bool {
				for _, m := range ms {
					if count(t, m.log, big) != want || count(t, m.log, `"b1"`)+count(t, m.log, `"b2"`) != want {
						return false
					}
				}
				return true
			})
			closeInput()
			for _, m := range ms {
				if code := m.wait(60 * time.Second); code != 0 {
					t.Fatalf("member %d exited %d", m.id, code)
				}
			}
		})
	}
	t.Run("over", func(t *testing.T) {
		for _, c := range []struct {
			order string
			limit int
		}{{"fifo", mcast.MaxPayload}, {"causal", mcast.PayloadLimit(mcast.Causal, 1)}, {"total", mcast.MaxPayload}, {"gossip", 32 << 10}} {
			cmd := exec.Command(mcastBin, "run", "--id", "1", "--peers", "1="+freePorts(t, 1)[0], "--order", c.order)
			cmd.Stdin = strings.NewReader("short\n" + strings.Repeat("x", c.limit+1) + "\n")
			out, err := cmd.CombinedOutput()
			want := fmt.Sprintf("line 2 is %d bytes, over the limit of %d", c.limit+1, c.limit)
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 64 || !strings.Contains(string(out), want) {
				t.Fatalf("%s: exit %v, want 64 and %q:\n%s", c.order, err, want, out)
			}
		}
	})
}
