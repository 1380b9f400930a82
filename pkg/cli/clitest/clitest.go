// Package clitest is what the multi-process tests of every tool share:
// the tool built once, local clusters started through scripts/cluster.sh,
// and process checks.
package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// Tags are build tags for the command Main builds: a test file built with
// a tag sets them in init, so that `go test -tags T` tests a binary built
// with T.
var Tags string

// Main builds the command in the current directory as name into a
// temporary directory, stores its path in *bin, runs the tests and exits.
// Use it as the body of TestMain.
func Main(m *testing.M, name string, bin *string) {
	dir, err := os.MkdirTemp("", name+"-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-tags", Tags, "-o", *bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building %s: %v\n%s", name, err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Script is the path of a file under the module's scripts/ directory, found
// from the test's working directory upwards.
func Script(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "scripts", name)
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// Cluster is a local cluster started by scripts/cluster.sh in Dir: member
// i's stdout is Dir/i.out, its stderr Dir/i.log, its process ID Dir/i.pid,
// and the peer list Dir/peers.
type Cluster struct {
	T   testing.TB
	Dir string
	N   int
}

// StartCluster starts n members of cmd (a binary and its arguments, with
// {id} standing for each member's ID) in dir, and stops them when the test
// ends, logging each member's output if it failed.
func StartCluster(t testing.TB, dir string, n int, cmd ...string) *Cluster {
	t.Helper()
	c := &Cluster{T: t, Dir: dir, N: n}
	args := append([]string{"start", "-n", strconv.Itoa(n), "-d", dir}, cmd...)
	if out, err := exec.Command(Script(t, "cluster.sh"), args...).CombinedOutput(); err != nil {
		t.Fatalf("cluster start: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		exec.Command(Script(t, "cluster.sh"), "stop", "-d", dir).Run()
		if t.Failed() {
			c.logAll()
		}
	})
	return c
}

// Netsplit starts n members of cmd, as StartCluster does, but each in a
// network namespace of its own on a bridge (scripts/netsplit.sh), so that
// partitions are real; env is added to the members' environment. It skips
// the test where namespaces cannot be made (not root, no ip or iptables),
// and removes the members and namespaces when the test ends. ctl runs a
// netsplit.sh command on the cluster ("partition", "1,2/3"; "heal"; ...).
func Netsplit(t testing.TB, dir string, n int, env []string, cmd ...string) (c *Cluster, ctl func(args ...string)) {
	t.Helper()
	script := Script(t, "netsplit.sh")
	ctl = func(args ...string) {
		t.Helper()
		x := exec.Command(script, append(args, "-d", dir)...)
		x.Env = append(os.Environ(), env...)
		if out, err := x.CombinedOutput(); err != nil {
			t.Fatalf("netsplit.sh %v: %v\n%s", args, err, out)
		}
	}
	up := exec.Command(script, append([]string{"up", "-n", strconv.Itoa(n), "-d", dir}, cmd...)...)
	up.Env = append(os.Environ(), env...)
	out, err := up.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 69 && !strings.Contains(string(out), "not ready") {
		t.Skipf("no network namespaces here: %s", out)
	}
	c = &Cluster{T: t, Dir: dir, N: n}
	t.Cleanup(func() {
		exec.Command(script, "down", "-d", dir).Run()
		if t.Failed() {
			c.logAll()
		}
	})
	if err != nil {
		t.Fatalf("netsplit.sh up: %v\n%s", err, out)
	}
	return c, ctl
}

func (c *Cluster) logAll() {
	for i := 1; i <= c.N; i++ {
		out, _ := os.ReadFile(c.File(i, "out"))
		log, _ := os.ReadFile(c.File(i, "log"))
		c.T.Logf("member %d stdout:\n%s\nstderr:\n%s", i, out, log)
	}
}

// File is member i's file with the given extension ("out", "log", "pid").
func (c *Cluster) File(i int, ext string) string {
	return filepath.Join(c.Dir, fmt.Sprintf("%d.%s", i, ext))
}

// Ctl runs scripts/cluster.sh with args (kill, pause, resume, restart ...)
// on this cluster.
func (c *Cluster) Ctl(args ...string) {
	c.T.Helper()
	args = append(args, "-d", c.Dir)
	if out, err := exec.Command(Script(c.T, "cluster.sh"), args...).CombinedOutput(); err != nil {
		c.T.Fatalf("cluster %v: %v\n%s", args, err, out)
	}
}

// Gone reports whether process pid has exited (it no longer exists, or
// it is a zombie waiting for its parent).
func Gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// WaitFor polls cond every 5 ms until it holds, failing the test after
// limit: a wait for an event the test observes, never a guess at timing.
func WaitFor(t testing.TB, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached within %v", limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// CheckFlags fails the test where the tool's command line breaks a house
// rule: one environment variable must mean one thing in every command
// (two flags that share one must share their type and usage text), and a
// help text names its default once (through the flag's value or
// DefaultText, never a "(default ...)" of its own beside urfave/cli's).
func CheckFlags(t *testing.T, app *ucli.App) {
	t.Helper()
	type use struct{ where, typ, usage string }
	seen := map[string]use{}
	var walk func(path string, flags []ucli.Flag, cmds []*ucli.Command)
	walk = func(path string, flags []ucli.Flag, cmds []*ucli.Command) {
		for _, f := range flags {
			df, ok := f.(ucli.DocGenerationFlag)
			if !ok {
				continue
			}
			u := use{path + " --" + f.Names()[0], fmt.Sprintf("%T", f), df.GetUsage()}
			if strings.Contains(u.usage, "(default") {
				t.Errorf("%s: its usage names a default of its own: %q", u.where, u.usage)
			}
			for _, env := range df.GetEnvVars() {
				if prev, ok := seen[env]; ok && (prev.typ != u.typ || prev.usage != u.usage) {
					t.Errorf("%s means two things: %s (%s, %q) and %s (%s, %q)", env, prev.where, prev.typ, prev.usage, u.where, u.typ, u.usage)
				}
				seen[env] = u
			}
		}
		for _, c := range cmds {
			walk(path+" "+c.Name, c.Flags, c.Subcommands)
		}
	}
	walk(app.Name, app.Flags, app.Commands)
}

// CheckMan fails the test when docs/man/<tool>.1 is not the man page
// urfave/cli makes of app (section 1, without the build's version); with
// UPDATE_MAN=1 in the environment it writes the page instead
// (scripts/man.sh does that for every tool).
func CheckMan(t *testing.T, app *ucli.App) {
	t.Helper()
	cli.Prepare(app)
	app.Version = ""
	page, err := app.ToManWithSection(1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(filepath.Dir(Script(t, "cluster.sh")), "..", "docs", "man", app.Name+".1")
	if os.Getenv("UPDATE_MAN") != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil || string(old) != page {
		t.Fatalf("%s is missing or stale: run scripts/man.sh", path)
	}
}

var (
	schemaOnce sync.Once
	schema     map[string]map[string]bool // "tool event" → documented fields
	schemaErr  error
)

// CheckJSON fails the test when output (JSON lines a tool printed) holds
// an event, or a field of an event, that docs/json.md does not list for
// tool, or a line that is not a JSON object naming its event.
func CheckJSON(t testing.TB, tool string, output []byte) {
	t.Helper()
	schemaOnce.Do(func() {
		path := filepath.Join(filepath.Dir(Script(t, "cluster.sh")), "..", "docs", "json.md")
		b, err := os.ReadFile(path)
		if err != nil {
			schemaErr = err
			return
		}
		schema = map[string]map[string]bool{}
		for _, line := range strings.Split(string(b), "\n") {
			cells := strings.Split(line, "|")
			if len(cells) != 5 || strings.TrimSpace(cells[1]) == "tool" || strings.HasPrefix(strings.TrimSpace(cells[1]), "-") {
				continue
			}
			fields := map[string]bool{}
			for _, f := range strings.Split(cells[3], ",") {
				fields[strings.TrimSpace(f)] = true
			}
			schema[strings.TrimSpace(cells[1])+" "+strings.TrimSpace(cells[2])] = fields
		}
	})
	if schemaErr != nil {
		t.Fatal(schemaErr)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(output)), "\n") {
		if line == "" {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Errorf("%s printed a line that is not a JSON object: %q", tool, line)
			continue
		}
		var event string
		_ = json.Unmarshal(obj["event"], &event)
		fields, ok := schema[tool+" "+event]
		if !ok {
			t.Errorf("%s printed event %q, which docs/json.md does not list: %s", tool, event, line)
			continue
		}
		for k := range obj {
			if !fields[k] {
				t.Errorf("%s printed field %q of event %q, which docs/json.md does not list: %s", tool, k, event, line)
			}
		}
	}
}

// RunFor runs bin with args and no input, killing it after limit, and
// returns its exit code (-1 if it was killed), its stderr and how long it
// ran.
func RunFor(limit time.Duration, bin string, args ...string) (code int, stderr string, took time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var errOut strings.Builder
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin, cmd.Stderr = strings.NewReader(""), &errOut
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return code, errOut.String(), took
}

// WaitPID waits up to limit for a command to write a process ID to path
// (atomically, by rename) and returns it.
func WaitPID(t testing.TB, limit time.Duration, path string) int {
	t.Helper()
	var pid int
	WaitFor(t, limit, func() bool {
		b, err := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// SpawnCost is what starting bin costs on this machine now: the longer
// of two runs of `bin --version`. A test that bounds a command's wall
// time by its promise plus a start-up slack measures this right after the
// timed run too, so load that rose since the slack was first measured
// does not fail a command that kept its promise.
func SpawnCost(bin string) time.Duration {
	var worst time.Duration
	for range 2 {
		_, _, took := RunFor(time.Minute, bin, "--version")
		worst = max(worst, took)
	}
	return worst
}
