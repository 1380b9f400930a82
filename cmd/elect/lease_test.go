package main

// Lease tests: the command elect runs is this test binary, a witness that
// appends "enter", then a "tick" every millisecond, to a file shared by
// every member (O_APPEND, one write per line), until it is killed. The
// file's order is the real order, so two commands overlap exactly when a
// line of one falls between the first and last lines of another.

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

const witnessEnv = "RT_WITNESS_FILE"

func witness(file string) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		os.Exit(3)
	}
	id, term, pid := os.Getenv("ELECT_ID"), os.Getenv("ELECT_TERM"), os.Getpid()
	write := func(what string) {
		fmt.Fprintf(f, "%s %s %s %d %d\n", what, id, term, pid, time.Now().UnixNano())
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	write("enter")
	for tick := time.NewTicker(time.Millisecond); ; {
		select {
		case <-tick.C:
			write("tick")
		case <-sigs:
			write("exit")
			os.Exit(0)
		}
	}
}

// cmdRun is one command's life as the witness file shows it.
type cmdRun struct {
	member, pid int
	term        string
	first, last int // line numbers
	from, till  int64
	ticks       int
}

func readRuns(file string) []*cmdRun {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	byPid := map[int]*cmdRun{}
	var runs []*cmdRun
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan(); n++ {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			continue // a line cut short by SIGKILL
		}
		member, _ := strconv.Atoi(fs[1])
		pid, _ := strconv.Atoi(fs[3])
		ns, _ := strconv.ParseInt(fs[4], 10, 64)
		r := byPid[pid]
		if r == nil {
			r = &cmdRun{member: member, pid: pid, term: fs[2], first: n, from: ns}
			byPid[pid] = r
			runs = append(runs, r)
		}
		r.last, r.till = n, ns
		if fs[0] == "tick" {
			r.ticks++
		}
	}
	return runs
}

// overlaps lists the pairs of commands that ran at the same time.
func overlaps(runs []*cmdRun) []string {
	slices.SortFunc(runs, func(a, b *cmdRun) int { return a.first - b.first })
	var out []string
	for i, a := range runs {
		for _, b := range runs[i+1:] {
			if b.first < a.last {
				out = append(out, fmt.Sprintf("member %d's command (term %s) ran %v beside member %d's (term %s)",
					a.member, a.term, time.Duration(min(a.till, b.till)-b.from), b.member, b.term))
			}
		}
	}
	return out
}

// gaps describes the time between one command's last line and the next
// command's first.
func gaps(runs []*cmdRun) string {
	slices.SortFunc(runs, func(a, b *cmdRun) int { return a.first - b.first })
	var out []string
	for i := 1; i < len(runs); i++ {
		out = append(out, time.Duration(runs[i].from-runs[i-1].till).Round(time.Millisecond).String())
	}
	return strings.Join(out, ", ")
}

// waitRun waits for a command of member that is not among seen to have
// ticked at least ticks times, and returns it.
func waitRun(t *testing.T, file string, member int, seen map[int]bool, ticks int) *cmdRun {
	t.Helper()
	var got *cmdRun
	clitest.WaitFor(t, waitLimit, func() bool {
		for _, r := range readRuns(file) {
			if r.member == member && !seen[r.pid] && r.ticks >= ticks {
				got = r
				return true
			}
		}
		return false
	})
	seen[got.pid] = true
	return got
}

// TestLeaseNoOverlap: the leader is stopped (SIGSTOP) while its command
// runs; another member takes over and runs its command for a while; the
// old leader resumes, takes leadership back and runs its command again.
// With leases (the default) the witness shows no two commands at once:
// the stopped leader's watchdog killed its command before the new leader's
// lease began. With --lease 0 the same schedule shows the overlap, which
// proves the witness can see one.
func TestLeaseNoOverlap(t *testing.T) {
	for _, mode := range []struct {
		name    string
		args    []string
		overlap bool
	}{{"lease", nil, false}, {"no lease", []string{"--lease", "0"}, true}} {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "witness")
			t.Setenv(witnessEnv, file)
			args := append(slices.Clone(mode.args), "--rerun", "--kill-grace", "100ms", "--", os.Args[0])
			c := startClusterIn(t, dir, 3, args...)
			seen := map[int]bool{}
			first := waitRun(t, file, 3, seen, 20)
			c.ctl("pause", "3")
			second := waitRun(t, file, 2, seen, 100)
			c.ctl("resume", "3")
			third := waitRun(t, file, 3, seen, 20)
			c.ctl("stop")
			found := overlaps(readRuns(file))
			t.Logf("commands: member 3 pid %d, member 2 pid %d, member 3 pid %d; overlaps: %d; gaps between commands: %s",
				first.pid, second.pid, third.pid, len(found), gaps(readRuns(file)))
			switch {
			case !mode.overlap && len(found) > 0:
				t.Fatalf("two commands at once:\n%s", strings.Join(found, "\n"))
			case mode.overlap && len(found) == 0:
				t.Fatalf("--lease 0 with a stopped leader showed no overlap: the witness sees nothing")
			}
			c.check()
		})
	}
}

// TestLeasePartition: members in network namespaces of their own. The
// leader (3) is cut off from the others: its lease runs out and its
// command is killed before the majority's new leader starts one; after
// healing, 3 takes over again, again without overlap.
func TestLeasePartition(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "witness")
	c, ctl := clitest.Netsplit(t, dir, 3, []string{witnessEnv + "=" + file},
		electBin, "run", "--no-color", "--rerun", "--kill-grace", "100ms", "--", os.Args[0])
	seen := map[int]bool{}
	first := waitRun(t, file, 3, seen, 20)
	ctl("partition", "1,2/3")
	second := waitRun(t, file, 2, seen, 100)
	ctl("heal")
	third := waitRun(t, file, 3, seen, 20)
	for i := 1; i <= 3; i++ {
		ctl("stop", strconv.Itoa(i))
	}
	runs := readRuns(file)
	if found := overlaps(runs); len(found) > 0 {
		t.Fatalf("two commands at once:\n%s", strings.Join(found, "\n"))
	}
	t.Logf("%d commands, none overlapping (member 3 pid %d, member 2 pid %d, member 3 pid %d); gaps between commands: %s",
		len(runs), first.pid, second.pid, third.pid, gaps(runs))
	_ = c
}

// TestLeaseJSON: a member alone is its own majority; with --json its
// leader and lease events match docs/json.md.
func TestLeaseJSON(t *testing.T) {
	c := startCluster(t, 1, "--json")
	var out []byte
	clitest.WaitFor(t, waitLimit, func() bool {
		out, _ = os.ReadFile(c.File(1, "out"))
		return strings.Contains(string(out), `"event":"lease"`)
	})
	if !strings.Contains(string(out), `"held":true`) {
		t.Fatalf("no held lease in %s", out)
	}
	clitest.CheckJSON(t, "elect", out)
}

// TestChaos: for CHAOS_SECS seconds (scripts/chaos.sh; skipped without
// it), random partitions, one-way cuts, pauses, kills and restarts of three
// members in network namespaces of their own, each running the witness
// under its lease (--rerun). Then everything heals, and a command must run
// again. The witness must show no two commands at once, whatever happened.
func TestChaos(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("CHAOS_SECS"))
	if secs <= 0 {
		t.Skip("CHAOS_SECS not set (scripts/chaos.sh sets it)")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "witness")
	_, ctl := clitest.Netsplit(t, dir, 3, []string{witnessEnv + "=" + file},
		electBin, "run", "--no-color", "--rerun", "--kill-grace", "100ms", "--state-file", filepath.Join(dir, "{id}.state"),
		"--", os.Args[0])
	seed := uint64(time.Now().UnixNano())
	t.Logf("chaos for %d s, seed %d", secs, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	end := time.Now().Add(time.Duration(secs) * time.Second)
	var down, paused []int
	var did []string
	for time.Now().Before(end) {
		n := 1 + rng.IntN(3)
		id := strconv.Itoa(n)
		switch rng.IntN(8) {
		case 0, 1:
			a := []string{"1,2/3", "1,3/2", "2,3/1"}[rng.IntN(3)]
			ctl("partition", a)
			did = append(did, "partition "+a)
		case 2:
			to := strconv.Itoa(1 + rng.IntN(3))
			if to != id {
				ctl("oneway", id, to)
				did = append(did, "oneway "+id+"→"+to)
			}
		case 3, 4:
			ctl("heal")
			did = append(did, "heal")
		case 5:
			if len(down)+len(paused) == 0 {
				ctl("pause", id)
				paused = append(paused, n)
				did = append(did, "pause "+id)
			}
		case 6:
			if len(down)+len(paused) == 0 {
				ctl("kill", id)
				down = append(down, n)
				did = append(did, "kill "+id)
			}
		case 7:
			for _, p := range paused {
				ctl("resume", strconv.Itoa(p))
				did = append(did, "resume "+strconv.Itoa(p))
			}
			for _, d := range down {
				ctl("restart", strconv.Itoa(d))
				did = append(did, "restart "+strconv.Itoa(d))
			}
			paused, down = nil, nil
		}
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond) // the pace of the chaos
	}
	ctl("heal")
	for _, p := range paused {
		ctl("resume", strconv.Itoa(p))
	}
	for _, d := range down {
		ctl("restart", strconv.Itoa(d))
	}
	healed := time.Now().UnixNano()
	// After healing, some member's command runs (again, or still) for a
	// while.
	clitest.WaitFor(t, 30*time.Second, func() bool {
		for _, r := range readRuns(file) {
			if r.till-max(r.from, healed) >= int64(50*time.Millisecond) {
				return true
			}
		}
		return false
	})
	for i := 1; i <= 3; i++ {
		ctl("stop", strconv.Itoa(i))
	}
	runs := readRuns(file)
	t.Logf("did: %s", strings.Join(did, ", "))
	if found := overlaps(runs); len(found) > 0 {
		t.Fatalf("two commands at once:\n%s", strings.Join(found, "\n"))
	}
	t.Logf("witness: %d commands, none overlapping", len(runs))
}
