package electd

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/election"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// fakeChild is a command that runs no process: it records what the
// service did to it and exits when the test says.
type fakeChild struct {
	env     []string
	leased  bool
	until   time.Time // the watchdog's deadline, as started or extended
	grace   time.Duration
	done    chan struct{}
	code    int
	signals []syscall.Signal
	stopped bool
	stopG   time.Duration
}

func (f *fakeChild) Pid() int                 { return 4242 }
func (f *fakeChild) Done() <-chan struct{}    { return f.done }
func (f *fakeChild) ExitCode() int            { return f.code }
func (f *fakeChild) Signal(s syscall.Signal)  { f.signals = append(f.signals, s) }
func (f *fakeChild) Extend(until time.Time)   { f.until = until }
func (f *fakeChild) Deadline() time.Time      { return f.until }
func (f *fakeChild) Stop(grace time.Duration) { f.stopped, f.stopG = true, grace }
func (f *fakeChild) exit(code int)            { f.code = code; close(f.done) }

// env is the value of one of the command's environment variables.
func (f *fakeChild) getenv(name string) string {
	for _, kv := range f.env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// harness drives a service through channels, as cli.Running does, with a
// manual clock, fake commands and a real state file.
type harness struct {
	t        *testing.T
	s        *service
	out      *bytes.Buffer
	events   chan node.Event
	failed   chan error
	signals  chan os.Signal
	hangups  chan os.Signal
	retired  int
	now      time.Time
	kids     []*fakeChild
	startErr error // the next start's error
	state    string
}

func newHarness(t *testing.T, cfg Config) *harness {
	h := &harness{t: t, out: &bytes.Buffer{}, events: make(chan node.Event), failed: make(chan error),
		signals: make(chan os.Signal), hangups: make(chan os.Signal), now: time.Unix(1000, 0),
		state: filepath.Join(t.TempDir(), "state")}
	if cfg.StateFile == "" {
		cfg.StateFile = h.state
	}
	h.s = newService(cfg, 1, cli.NewOutput(h.out, false), slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.s.now = func() time.Time { return h.now }
	h.s.retire = func() { h.retired++ }
	h.s.start = func(args, env []string, leased bool, until time.Time, grace time.Duration) (child, error) {
		if err := h.startErr; err != nil {
			h.startErr = nil
			return nil, err
		}
		k := &fakeChild{env: env, leased: leased, until: until, grace: grace, done: make(chan struct{})}
		h.kids = append(h.kids, k)
		return k, nil
	}
	return h
}

// step feeds one event and reports whether the run ended, and how.
func (h *harness) step(ev node.Event) (bool, error) { return h.s.event(ev) }

// kid is the last command started.
func (h *harness) kid() *fakeChild {
	h.t.Helper()
	if len(h.kids) == 0 {
		h.t.Fatal("no command was started")
	}
	return h.kids[len(h.kids)-1]
}

// persisted reads the state file: the highest term, the last fence.
func (h *harness) persisted() (term, fence uint64) {
	h.t.Helper()
	v, err := cli.ReadUints(h.state, 2)
	if err != nil {
		h.t.Fatal(err)
	}
	return v[0], v[1]
}

func exitCode(err error) int {
	var e *cli.ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return -1
}

// stateWriter checks, at every line printed, what the state file holds.
type stateWriter struct {
	mu    sync.Mutex
	path  string
	lines []string
	terms []uint64 // the persisted term when each line was printed
}

func (w *stateWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, _ := cli.ReadUints(w.path, 2)
	w.lines = append(w.lines, strings.TrimSpace(string(b)))
	w.terms = append(w.terms, v[0])
	return len(b), nil
}

// A new term is in the state file before it is printed: a member killed
// between the two never announces a term it could announce again.
func TestTermPersistedBeforePrinted(t *testing.T) {
	h := newHarness(t, Config{Election: election.Config{Term: 4}})
	w := &stateWriter{path: h.state}
	h.s.out = cli.NewOutput(w, false)
	for _, ev := range []node.Event{
		election.LeaderEvent{Leader: 3, Term: 5},
		election.LeaderEvent{Leader: 1, Term: 7, Self: true},
	} {
		if done, err := h.step(ev); done {
			t.Fatalf("%v ended the run: %v", ev, err)
		}
	}
	want := []string{"leader 3 term 5", "leader 1 term 7"}
	if strings.Join(w.lines, "|") != strings.Join(want, "|") {
		t.Fatalf("printed %q, want %q", w.lines, want)
	}
	if w.terms[0] != 5 || w.terms[1] != 7 {
		t.Errorf("state file held terms %v as the lines were printed, want [5 7]", w.terms)
	}
	// An older term (a late announcement) does not lower it.
	h.step(election.LeaderEvent{Leader: 2, Term: 6})
	if term, _ := h.persisted(); term != 7 {
		t.Errorf("persisted term %d after an older announcement, want 7", term)
	}
}

// With a lease, the command starts when the lease is held, gets the term
// and a fence persisted before it starts, is extended on renewal, and is
// stopped when the lease is lost; the member then resigns and exits 76.
func TestLostLeaseStopsCommand(t *testing.T) {
	h := newHarness(t, Config{Election: election.Config{Lease: time.Second, Term: 2}, Fence: 2<<32 + 3,
		Child: []string{"serve"}, KillGrace: 5 * time.Second})
	h.step(election.LeaderEvent{Leader: 1, Term: 3, Self: true})
	if len(h.kids) != 0 {
		t.Fatal("the command started before the lease was held")
	}
	until := h.now.Add(time.Second)
	h.step(election.LeaseEvent{Term: 3, Held: true, Until: until})
	k := h.kid()
	if !k.leased || !k.until.Equal(until) || k.grace != 5*time.Second {
		t.Errorf("started leased=%v until %v grace %v, want a lease until %v, grace 5s", k.leased, k.until, k.grace, until)
	}
	wantFence := uint64(3<<32 + 1)
	if k.getenv("ELECT_TERM") != "3" || k.getenv("ELECT_LEADER") != "1" || k.getenv("ELECT_ID") != "1" ||
		k.getenv("ELECT_FENCE") != "12884901889" {
		t.Errorf("environment %q", k.env)
	}
	if term, fence := h.persisted(); term != 3 || fence != wantFence {
		t.Errorf("persisted term %d fence %d, want 3 and %d", term, fence, wantFence)
	}
	renewed := until.Add(500 * time.Millisecond)
	h.step(election.LeaseEvent{Term: 3, Held: true, Renewed: true, Until: renewed})
	if !k.until.Equal(renewed) {
		t.Errorf("the renewal did not extend the command's lease: %v, want %v", k.until, renewed)
	}
	if strings.Count(h.out.String(), "lease held") != 1 {
		t.Errorf("a renewal was printed:\n%s", h.out)
	}
	// Lost with 300ms of the lease left: the grace is cut to what remains.
	h.now = renewed.Add(-300 * time.Millisecond)
	done, err := h.step(election.LeaseEvent{Term: 3, Reason: "no majority", Until: renewed})
	if !done || exitCode(err) != cli.ExitLost {
		t.Fatalf("lost lease: done %v err %v, want exit 76", done, err)
	}
	if !k.stopped || k.stopG != 300*time.Millisecond {
		t.Errorf("command stopped %v with grace %v, want stopped with 300ms", k.stopped, k.stopG)
	}
	if h.retired != 1 {
		t.Errorf("retired %d times, want 1", h.retired)
	}
	if !strings.Contains(h.out.String(), "lease lost term 3 (no majority)") {
		t.Errorf("output:\n%s", h.out)
	}
}

// A step-down stops the command as a lost lease does.
func TestStepDownStopsCommand(t *testing.T) {
	h := newHarness(t, Config{Election: election.Config{Lease: time.Second}, Child: []string{"serve"}, KillGrace: 100 * time.Millisecond})
	h.step(election.LeaseEvent{Term: 1, Held: true, Until: h.now.Add(time.Second)})
	done, err := h.step(election.StepDownEvent{Term: 1, Reason: "higher term"})
	if !done || exitCode(err) != cli.ExitLost || !h.kid().stopped || h.kid().stopG != 100*time.Millisecond {
		t.Fatalf("step-down: done %v err %v stopped %v grace %v", done, err, h.kid().stopped, h.kid().stopG)
	}
}

// With Rerun the member stays in the election after a loss and runs the
// command again on the next lease, under a higher fence, even in the same
// term.
func TestRerun(t *testing.T) {
	h := newHarness(t, Config{Election: election.Config{Lease: time.Second}, Child: []string{"serve"}, Rerun: true, KillGrace: time.Second})
	var fences []string
	for i := range 3 {
		term := uint64(4 + i/2) // terms 4, 4, 5
		if done, err := h.step(election.LeaseEvent{Term: term, Held: true, Until: h.now.Add(time.Second)}); done {
			t.Fatalf("held: %v", err)
		}
		k := h.kid()
		fences = append(fences, k.getenv("ELECT_FENCE"))
		if _, fence := h.persisted(); k.getenv("ELECT_FENCE") != strconvU(fence) {
			t.Errorf("command %d has fence %s, the state file %d", i, k.getenv("ELECT_FENCE"), fence)
		}
		if done, err := h.step(election.LeaseEvent{Term: term, Reason: "expired"}); done {
			t.Fatalf("lost with --rerun ended the run: %v", err)
		}
		if !k.stopped {
			t.Errorf("command %d not stopped", i)
		}
	}
	want := []string{strconvU(4<<32 + 1), strconvU(4<<32 + 2), strconvU(5<<32 + 1)}
	if strings.Join(fences, ",") != strings.Join(want, ",") {
		t.Errorf("fences %v, want %v", fences, want)
	}
	if h.retired != 0 {
		t.Errorf("retired %d times under --rerun", h.retired)
	}
}

func strconvU(v uint64) string { return strconv.FormatUint(v, 10) }

// A command that exits by itself ends the run with its code, and the
// member resigns so that the others need not wait for a timeout.
func TestCommandExitResigns(t *testing.T) {
	h := newHarness(t, Config{Election: election.Config{Lease: time.Second}, Child: []string{"serve"}})
	h.step(election.LeaseEvent{Term: 1, Held: true, Until: h.now.Add(time.Second)})
	h.kid().exit(3)
	done, err := h.s.exited()
	if !done || exitCode(err) != 3 || h.retired != 1 {
		t.Fatalf("exit 3: done %v err %v retired %d", done, err, h.retired)
	}
}

// A command that ends after the lease's end was killed by the watchdog
// while this process could not act: exit 76, or with Rerun wait to lead
// again.
func TestWatchdogKillAtLeaseEnd(t *testing.T) {
	for _, rerun := range []bool{false, true} {
		h := newHarness(t, Config{Election: election.Config{Lease: time.Second}, Child: []string{"serve"}, Rerun: rerun})
		h.step(election.LeaseEvent{Term: 1, Held: true, Until: h.now.Add(time.Second)})
		h.now = h.now.Add(time.Second)
		h.kid().exit(137)
		done, err := h.s.exited()
		if rerun {
			if done || h.s.kid != nil || h.s.leading {
				t.Errorf("rerun: done %v kid %v leading %v", done, h.s.kid, h.s.leading)
			}
			continue
		}
		if !done || exitCode(err) != cli.ExitLost || h.retired != 1 {
			t.Errorf("watchdog kill: done %v err %v retired %d, want exit 76 and a resignation", done, err, h.retired)
		}
	}
}

// A lease that ends before the command could start is not an error: the
// member goes on and starts it on the next lease.
func TestLeaseOverBeforeStart(t *testing.T) {
	h := newHarness(t, Config{Election: election.Config{Lease: time.Second}, Child: []string{"serve"}})
	h.startErr = cli.ErrLeaseOver
	if done, err := h.step(election.LeaseEvent{Term: 1, Held: true, Until: h.now.Add(time.Second)}); done {
		t.Fatalf("lease over before start ended the run: %v", err)
	}
	if h.s.leading || len(h.kids) != 0 {
		t.Fatal("leading without a command")
	}
	h.step(election.LeaseEvent{Term: 1, Held: true, Until: h.now.Add(2 * time.Second)})
	if len(h.kids) != 1 {
		t.Fatal("the next lease did not start the command")
	}
	// A command that cannot start at all ends the run with its error.
	h2 := newHarness(t, Config{Election: election.Config{Lease: time.Second}, Child: []string{"missing"}})
	h2.startErr = cli.Exitf(cli.ExitNotFound, "not found")
	if done, err := h2.step(election.LeaseEvent{Term: 1, Held: true, Until: h2.now.Add(time.Second)}); !done || exitCode(err) != cli.ExitNotFound || h2.retired != 1 {
		t.Fatalf("failed start: done %v err %v retired %d", done, err, h2.retired)
	}
}

// Without a lease the command runs as soon as this member leads, with no
// watchdog, and stops with the full grace when another leads.
func TestNoLeaseRunsOnLeading(t *testing.T) {
	h := newHarness(t, Config{Child: []string{"serve"}, KillGrace: 2 * time.Second})
	h.step(election.LeaderEvent{Leader: 2, Term: 1})
	if len(h.kids) != 0 {
		t.Fatal("started while following")
	}
	h.step(election.LeaderEvent{Leader: 1, Term: 2, Self: true})
	if k := h.kid(); k.leased || k.getenv("ELECT_TERM") != "2" {
		t.Fatalf("leased %v env %q", k.leased, k.env)
	}
	// Lease events do not concern a member without a lease.
	done, err := h.step(election.LeaderEvent{Leader: 3, Term: 3})
	if !done || exitCode(err) != cli.ExitLost || h.kid().stopG != 2*time.Second {
		t.Fatalf("another leader: done %v err %v grace %v", done, err, h.kid().stopG)
	}
}

// The whole loop: signals go to a running command, which decides; SIGHUP
// reaches it too; without a command a signal resigns; a failed transport
// is exit 69.
func TestLoopSignalsAndTransport(t *testing.T) {
	h := newHarness(t, Config{Election: election.Config{Lease: time.Minute}, Child: []string{"serve"}})
	run := func() chan error {
		r := make(chan error, 1)
		go func() {
			r <- h.s.loop(&cli.Running{Events: h.events, Done: h.failed, Signals: h.signals, Hangups: h.hangups})
		}()
		return r
	}
	result := run()
	h.events <- election.LeaseEvent{Term: 1, Held: true, Until: time.Now().Add(time.Minute)}
	h.hangups <- syscall.SIGHUP
	h.signals <- syscall.SIGTERM
	// The loop takes one input at a time: once the next is taken, the
	// ones before it are handled.
	h.events <- election.LeaderEvent{Leader: 1, Term: 1, Self: true}
	k := h.kid()
	if len(k.signals) != 2 || k.signals[0] != syscall.SIGHUP || k.signals[1] != syscall.SIGTERM {
		t.Fatalf("command got %v, want [hangup terminated]", k.signals)
	}
	h.s.now = time.Now // the loop's own clock from here on: the lease is not over
	k.exit(143)
	if err := <-result; exitCode(err) != 143 || h.retired != 1 {
		t.Fatalf("command ended by its signal: %v (retired %d), want exit 143", err, h.retired)
	}

	h = newHarness(t, Config{Child: []string{"serve"}})
	result = run()
	h.signals <- syscall.SIGINT
	if err := <-result; exitCode(err) != 130 || h.retired != 1 {
		t.Fatalf("SIGINT before the command ran: %v (retired %d), want exit 130", err, h.retired)
	}

	h = newHarness(t, Config{})
	result = run()
	h.signals <- syscall.SIGTERM
	if err := <-result; err != nil || h.retired != 1 {
		t.Fatalf("SIGTERM without a command: %v (retired %d), want nil", err, h.retired)
	}

	h = newHarness(t, Config{})
	result = run()
	h.failed <- errors.New("socket closed")
	if err := <-result; exitCode(err) != cli.ExitUnavailable {
		t.Fatalf("failed transport: %v, want exit 69", err)
	}
}
