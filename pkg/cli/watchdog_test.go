package cli

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// watchdogSlack and schedProbe bound how late a leased command may die
// after its deadline in this test. The slack is the host's scheduling
// delay, which has no hard bound, so each command is allowed watchdogSlack
// plus four times the worst scheduling delay schedProbe measured in this
// process around its deadline: once for each process or goroutine that
// must run between the deadline and this test's seeing the death (the
// watchdog, the killed command's exit, this process's reaper, the test).
// watchdogSlack is what that leaves unexplained: idle, commands die 5 ms
// late at the median and 17 ms at worst (docs/elect.md); on 2 cores at
// load 36-70 (two busy loops and other test suites), up to 778 ms later
// than four times the delay this process measured (the watchdog is
// another process and is scheduled apart), while the deadline itself was
// missed by up to 2.5 s.
const watchdogSlack = time.Second

// schedProbe measures this process's scheduling delay: how late a 5 ms
// sleep wakes, from start until stop is called.
type schedProbe struct {
	mu      sync.Mutex
	samples []probeSample
	done    chan struct{}
}

type probeSample struct {
	at   time.Time // when the sleep ended
	late time.Duration
}

func startProbe() *schedProbe {
	p := &schedProbe{done: make(chan struct{})}
	go func() {
		for {
			select {
			case <-p.done:
				return
			default:
			}
			t0 := time.Now()
			time.Sleep(5 * time.Millisecond)
			now := time.Now()
			p.mu.Lock()
			p.samples = append(p.samples, probeSample{now, now.Sub(t0) - 5*time.Millisecond})
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *schedProbe) stop() { close(p.done) }

// worst is the largest delay of a sleep that ended in [from, to] or was
// under way at to.
func (p *schedProbe) worst(from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var w time.Duration
	for i := len(p.samples) - 1; i >= 0; i-- {
		s := p.samples[i]
		if s.at.Before(from) {
			break
		}
		if s.at.Add(-s.late - 5*time.Millisecond).Before(to) {
			w = max(w, s.late)
		}
	}
	return w
}

// TestWatchdogLateness: leased commands nobody extends die at their
// deadline (the resource's end less the kill slack, slack.go) plus at most
// watchdogSlack and four times the scheduling delay measured meanwhile,
// each killed by its own watchdog; and it counts those that died after the
// resource's end itself, which the slack is there to prevent. How late is
// measured from this process, which sees the death only when it runs
// itself: an upper bound. WATCHDOG_SOAK=5m runs commands back to back for
// that long (run it beside a CPU hog to measure the slack on a starved
// machine); the default is ten. Each lease is WATCHDOG_LEASE long (default
// 300ms): a lease shorter than the slack starts nothing, and is counted.
// WATCHDOG_REALTIME=on runs it under --realtime's scheduling.
// WATCHDOG_TOUCH_MB=N makes each command one that has touched N MB of
// memory (whose exit, the kernel's teardown of it, takes CPU in the
// command's own context) rather than `sleep`; the test then also reports
// how long each took from its watchdog's kill to its reaping by this
// process (exit after kill), and the lease should be long enough for the
// command to touch its memory first (those that had not are counted).
func TestWatchdogLateness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts leased commands one after another")
	}
	soak, _ := time.ParseDuration(os.Getenv("WATCHDOG_SOAK"))
	lease := 300 * time.Millisecond
	if d, err := time.ParseDuration(os.Getenv("WATCHDOG_LEASE")); err == nil && d > 0 {
		lease = d
	}
	// WATCHDOG_REALTIME=on measures what --realtime gives (this process,
	// the supervisor, and its watchdogs under SCHED_RR, sched.go); it
	// stays so for the rest of this test binary's run, so it is off
	// unless asked for.
	if os.Getenv("WATCHDOG_REALTIME") == "on" {
		if err := SetRealtime(RealtimePriority); err != nil {
			t.Skipf("WATCHDOG_REALTIME=on: %v", err)
		}
		watchdogRT = WatchdogPriority
		defer func() { watchdogRT = 0 }()
		t.Logf("realtime: SCHED_RR priority %d, watchdogs %d", RealtimePriority, WatchdogPriority)
	}
	args, env := []string{"sleep", "30"}, []string(nil)
	touchMB, _ := strconv.Atoi(os.Getenv("WATCHDOG_TOUCH_MB"))
	marker := filepath.Join(t.TempDir(), "touched")
	if touchMB > 0 {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		args = []string{self, "-test.run", "^$"}
		env = []string{touchHelperEnv + "=" + strconv.Itoa(touchMB), touchDoneEnv + "=" + marker}
	}
	probe := startProbe()
	defer probe.stop()
	var late, excess, slacks, afterEnd, firedLate, exitAfterKill, exitTouched []time.Duration
	var worstDelay time.Duration
	unstarted, seenAfter, untouched := 0, 0, 0
	for end := time.Now().Add(soak); len(late) < 10 && unstarted < 1000 || time.Now().Before(end); {
		// A watchdog already up, as a warm one is: its start-up is not
		// the slack measured here (the command waits for it).
		w := PrepareWatch()
		<-w.ready
		<-w.guarding
		until := time.Now().Add(lease) // the resource's end
		_ = os.Remove(marker)
		c, err := w.Start(args, env, until)
		if errors.Is(err, ErrLeaseOver) {
			// A starved machine took the lease to start the command,
			// or its slack is longer than the lease: it is not started
			// at all, which is what must happen.
			w.Cancel()
			unstarted++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-c.Done():
		case <-time.After(30 * time.Second):
			c.Signal(syscall.SIGKILL)
			t.Fatal("a leased command still ran 30 s past its deadline")
		}
		died := time.Now()
		deadline := c.Deadline() // with what the watchdog measured, up to its kill
		d := died.Sub(deadline)
		if d < 0 {
			t.Fatalf("killed %v before its deadline", -d)
		}
		if c.ExitCode() != 128+int(syscall.SIGKILL) {
			t.Fatalf("exit code %d, want %d (SIGKILL)", c.ExitCode(), 128+int(syscall.SIGKILL))
		}
		delay := probe.worst(deadline.Add(-100*time.Millisecond), died)
		worstDelay = max(worstDelay, delay)
		if allowed := watchdogSlack + 4*delay; d > allowed {
			// Say which process was late: the watchdog's own wake-up
			// (fired after the deadline) or the kill's delivery and
			// this process's notice of it (died after fired).
			fired := c.Fired()
			t.Errorf("a leased command died %v after its deadline: more than the slack, %v + 4 × %v of scheduling delay measured meanwhile (the watchdog fired %v after the deadline, %v before the death was seen here; 0 time: it never said)",
				d, watchdogSlack, delay, fired.Sub(deadline), died.Sub(fired))
		}
		late = append(late, d)
		excess = append(excess, max(0, d-4*delay))
		slacks = append(slacks, until.Sub(deadline))
		fired := c.Fired()
		if fired.IsZero() {
			t.Fatal("the watchdog killed the command without saying when")
		}
		if fired.Before(deadline) {
			t.Fatalf("the watchdog fired %v before its deadline", deadline.Sub(fired))
		}
		firedLate = append(firedLate, fired.Sub(deadline))
		exitAfterKill = append(exitAfterKill, timeOf(c.reaped).Sub(fired))
		if _, err := os.Stat(marker); touchMB > 0 && err != nil {
			untouched++ // killed before it had touched all its memory
		} else if touchMB > 0 {
			exitTouched = append(exitTouched, timeOf(c.reaped).Sub(fired))
		}
		if a := fired.Sub(until); a > 0 {
			afterEnd = append(afterEnd, a)
		}
		if died.After(until) {
			seenAfter++
		}
	}
	if len(late) == 0 {
		if s := KillSlack(); s >= lease {
			t.Skipf("no command started in %d leases of %v: the kill slack measured on this host, %v, is longer than the lease", unstarted, lease, s)
		}
		t.Fatalf("no command started in %d leases of %v, though the kill slack is %v", unstarted, lease, KillSlack())
	}
	slices.Sort(late)
	slices.Sort(excess)
	slices.Sort(slacks)
	slices.Sort(afterEnd)
	slices.Sort(firedLate)
	slices.Sort(exitAfterKill)
	slices.Sort(exitTouched)
	q := func(l []time.Duration, p float64) time.Duration {
		if len(l) == 0 {
			return 0
		}
		return l[int(p*float64(len(l)-1))]
	}
	t.Logf("%d leased commands of %v: killed after their deadline by %v median, %v p99, %v at most; less four times the scheduling delay measured meanwhile, %v at most (worst delay %v); %d not started (the usable lease was gone first)",
		len(late), lease, q(late, 0.5), q(late, 0.99), late[len(late)-1], excess[len(excess)-1], worstDelay, unstarted)
	t.Logf("the watchdogs fired after their deadlines by %v median, %v p99, %v at most (by their own clock readings)",
		q(firedLate, 0.5), q(firedLate, 0.99), q(firedLate, 1))
	t.Logf("kill slack (usable lease lost) %v median, %v p99, %v at most (%.1f%% of the lease at the median); killed after the resource's end: %d (by %v at most); seen dead after it by this process (which sees it late when it runs late): %d",
		q(slacks, 0.5), q(slacks, 0.99), slacks[len(slacks)-1], 100*float64(q(slacks, 0.5))/float64(lease), len(afterEnd), q(afterEnd, 1), seenAfter)
	t.Logf("exit after kill (the watchdog's kill to this process's reaping of the command), %d commands: %v median, %v p90, %v at most",
		len(exitAfterKill), q(exitAfterKill, 0.5), q(exitAfterKill, 0.9), q(exitAfterKill, 1))
	if touchMB > 0 {
		t.Logf("exit after kill, the %d commands that had touched all %d MB (%d had not yet): %v median, %v p90, %v at most",
			len(exitTouched), touchMB, untouched, q(exitTouched, 0.5), q(exitTouched, 0.9), q(exitTouched, 1))
	}
}

// touchHelperEnv makes this test binary a command that touches that many
// MB of memory, creates the file touchDoneEnv names, and sleeps.
const (
	touchHelperEnv = "RT_TEST_TOUCH_MB"
	touchDoneEnv   = "RT_TEST_TOUCH_DONE"
)

// touchHelper is that command (TestMain, through realtimeHelper).
func touchHelper() {
	mb, _ := strconv.Atoi(os.Getenv(touchHelperEnv))
	b := make([]byte, mb<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	_ = os.WriteFile(os.Getenv(touchDoneEnv), nil, 0o644)
	time.Sleep(time.Hour)
	runtime.KeepAlive(b)
	os.Exit(0)
}
