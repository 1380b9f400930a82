// Package docs holds the test that runs the shell examples of
// docs/recipes.md and README.md.
package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// An example is one marked block of a Markdown file: a script to run and
// the lines it prints.
type example struct {
	name   string
	script string
	want   []*regexp.Regexp // what it prints, line by line; nil stands for "..."
	// console: a transcript, which shows stderr and stdout as a terminal
	// does; a recipe's lines are its stdout only.
	console bool
}

// block finds the code blocks of a Markdown file, each with its marker
// "<!-- recipe: NAME -->" or "<!-- example: NAME -->" if it has one.
var block = regexp.MustCompile("(?s)(?:<!-- (?:recipe|example): ([a-z-]+) -->\n)?```(sh|console)\n(.*?)```")

// examples reads a Markdown file's marked blocks. A ```sh block is a
// script whose "#> " lines are the lines it prints (regular
// expressions); the file's first ```sh block, marked or not, is the
// prelude of every script (docs/recipes.md's scratch directory). A
// ```console block is a transcript: "$ " starts a command, "> " goes on
// with it, and every other line is a line it printed (see transcriptLine).
func examples(t *testing.T, file string) (prelude string, out []example) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return parseExamples(string(b))
}

func parseExamples(md string) (prelude string, out []example) {
	for i, m := range block.FindAllStringSubmatch(md, -1) {
		if i == 0 && m[2] == "sh" {
			prelude = m[3]
			continue
		}
		if m[1] == "" {
			continue
		}
		ex := example{name: m[1], console: m[2] == "console"}
		for _, line := range strings.Split(strings.TrimSuffix(m[3], "\n"), "\n") {
			switch {
			case ex.console && strings.HasPrefix(line, "$ "):
				ex.script += line[2:] + "\n"
			case ex.console && strings.HasPrefix(line, "> "):
				ex.script += line[2:] + "\n"
			case ex.console && line == "...":
				ex.want = append(ex.want, nil)
			case ex.console:
				ex.want = append(ex.want, transcriptLine(line))
			default:
				if want, ok := strings.CutPrefix(line, "#> "); ok {
					ex.want = append(ex.want, regexp.MustCompile("^"+want+"$"))
				} else {
					ex.script += line + "\n"
				}
			}
		}
		out = append(out, ex)
	}
	return prelude, out
}

var (
	exitLine = regexp.MustCompile(`^exit \d+$`)
	// What changes from run to run in a transcript: numbers (terms,
	// tokens, ports, offsets) and mktemp's directory names.
	varying = regexp.MustCompile(`/tmp/tmp\.[A-Za-z0-9]+|[-+]?\d+(?:\.\d+)?`)
)

// transcriptLine is the pattern a transcript's printed line stands for:
// the line itself, except that each number stands for any number and a
// mktemp directory for any; an "exit N" line (a command's exit status)
// is compared as it stands.
func transcriptLine(line string) *regexp.Regexp {
	if exitLine.MatchString(line) {
		return regexp.MustCompile("^" + regexp.QuoteMeta(line) + "$")
	}
	var re strings.Builder
	re.WriteString("^")
	last := 0
	for _, loc := range varying.FindAllStringIndex(line, -1) {
		if loc[0] > 0 && isLetter(line[loc[0]-1]) {
			continue // part of a name, as in "db2"
		}
		re.WriteString(regexp.QuoteMeta(line[last:loc[0]]))
		if strings.HasPrefix(line[loc[0]:], "/tmp/") {
			re.WriteString(`\S*/tmp\.\w+`)
		} else {
			re.WriteString(`[-+]?\d+(?:\.\d+)?`) // a signed offset may print either sign
		}
		last = loc[1]
	}
	re.WriteString(regexp.QuoteMeta(line[last:]) + "$")
	return regexp.MustCompile(re.String())
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }

// matchLines reports whether got matches want, where a nil pattern
// ("...") matches any number of lines, none included.
func matchLines(got []string, want []*regexp.Regexp) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == nil {
		for skip := 0; skip <= len(got); skip++ {
			if matchLines(got[skip:], want[1:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && want[0].MatchString(got[0]) && matchLines(got[1:], want[1:])
}

var runs atomic.Int64

// waitReport is the line a client prints on stderr once it has waited a
// second (docs/lockd.md, "Waiting"): on a busy machine any example's
// client may print one, so transcripts do not show them and the
// comparison leaves them out; so is the warning a leased command's
// watchdog prints when the host starves its processes (pkg/cli slack.go).
var waitReport = regexp.MustCompile(`^(lockd|ticketd): waited \d+s for |the host is starving its processes: `)

func withoutWaitReports(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !waitReport.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// leftoverGrace is how long a process an example started may take to be
// reaped after the example has ended before it counts as left running.
var leftoverGrace = 10 * time.Second

// run runs one example with bash from root, with the tools in bin first
// on PATH and TMPDIR in a directory of the test's own, and returns what
// it printed. It returns an error if the script fails, or if any
// process it started is still running once it has ended: every process
// it starts inherits a marker in its environment, which is how they are
// found (and then killed) however they were detached.
func run(t *testing.T, bin, root, prelude string, ex example, timeout time.Duration) ([]string, error) {
	tag := fmt.Sprintf("ROUNDTABLE_DOCS_RUN=%d-%d", os.Getpid(), runs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -eu\n"+prelude+ex.script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "NO_COLOR=1", "TMPDIR="+t.TempDir(), tag)
	cmd.WaitDelay = 10 * time.Second // a process left behind may hold the pipes
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	if ex.console {
		cmd.Stderr = &stdout
	} else {
		cmd.Stderr = &stderr
	}
	err := cmd.Run()
	left := leftovers(tag, leftoverGrace)
	for _, p := range left {
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
	got := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	var msg strings.Builder
	if len(left) > 0 {
		msg.WriteString("still running after the example ended:")
		for _, p := range left {
			fmt.Fprintf(&msg, "\n  pid %d: %s", p.pid, p.args)
		}
		msg.WriteString("\n")
	}
	if err != nil {
		fmt.Fprintf(&msg, "%v\noutput:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if msg.Len() > 0 {
		return got, errors.New(msg.String())
	}
	return got, nil
}

type proc struct {
	pid  int
	args string
}

// leftovers waits up to grace for the processes whose environment holds
// tag to end (a stopped cluster's members may take a moment to be
// reaped), and returns those still running then. It returns nothing
// only after two scans, 50 ms apart, in which every live process could
// be read: a process caught inside execve shows an empty environment
// for a moment, and a scan that stopped there would miss it. A process
// whose environment stays empty for a second (one started with env -i)
// is not inside execve and is passed over.
func leftovers(tag string, grace time.Duration) []proc {
	deadline := time.Now().Add(grace)
	clean := 0
	empty := map[string]time.Time{} // pid and start time → first seen empty
	for {
		var left []proc
		unsure := false
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			stat, err := os.ReadFile(d + "/stat")
			if err != nil {
				continue // gone
			}
			i := bytes.LastIndexByte(stat, ')')
			if i < 0 {
				continue
			}
			f := strings.Fields(string(stat[i+1:]))
			// A zombie has ended; its parent has yet to reap it. A kernel
			// thread (flags, field 9, has PF_KTHREAD) has no environment.
			if len(f) < 20 || f[0] == "Z" {
				continue
			}
			if flags, _ := strconv.ParseUint(f[6], 10, 64); flags&0x00200000 != 0 {
				continue
			}
			env, err := os.ReadFile(d + "/environ")
			if errors.Is(err, fs.ErrPermission) {
				continue // another user's
			}
			if err != nil || len(env) == 0 {
				key := d + " " + f[19] // field 22, the start time
				if first, ok := empty[key]; !ok {
					empty[key] = time.Now()
					unsure = true
				} else if time.Since(first) < time.Second {
					unsure = true // inside execve, or not yet readable
				}
				continue
			}
			if !bytes.Contains(append([]byte{0}, env...), []byte("\x00"+tag+"\x00")) {
				continue
			}
			pid, _ := strconv.Atoi(filepath.Base(d))
			args, _ := os.ReadFile(d + "/cmdline")
			left = append(left, proc{pid, strings.TrimSpace(string(bytes.ReplaceAll(args, []byte{0}, []byte{' '})))})
		}
		if len(left) == 0 && !unsure {
			clean++
		} else {
			clean = 0
		}
		if clean >= 2 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var (
	toolsOnce sync.Once
	toolsDir  string
	toolsErr  error
)

// TestMain removes the tools buildTools built.
func TestMain(m *testing.M) {
	code := m.Run()
	if toolsDir != "" {
		os.RemoveAll(toolsDir)
	}
	os.Exit(code)
}

// buildTools builds every tool of this checkout, once for all the tests,
// into a directory of their own.
func buildTools(t *testing.T) (bin, root string) {
	if testing.Short() {
		t.Skip("starts clusters")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	toolsOnce.Do(func() {
		if toolsDir, toolsErr = os.MkdirTemp("", "roundtable-docs-"); toolsErr != nil {
			return
		}
		if out, err := exec.Command("go", "build", "-o", toolsDir+"/", "../cmd/...").CombinedOutput(); err != nil {
			toolsErr = fmt.Errorf("building the tools: %v\n%s", err, out)
		}
	})
	if toolsErr != nil {
		t.Fatal(toolsErr)
	}
	root, _ = filepath.Abs("..")
	return toolsDir, root
}

func runAll(t *testing.T, bin, root, prelude string, all []example) {
	for _, ex := range all {
		t.Run(ex.name, func(t *testing.T) {
			got, err := run(t, bin, root, prelude, ex, 90*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			got = withoutWaitReports(got)
			if !matchLines(got, ex.want) {
				var want []string
				for _, w := range ex.want {
					if w == nil {
						want = append(want, "...")
					} else {
						want = append(want, w.String())
					}
				}
				t.Fatalf("printed:\n%s\nwant lines matching:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestRecipes runs every recipe of docs/recipes.md with the tools built
// from this checkout, compares what it prints, and checks it leaves no
// process running.
func TestRecipes(t *testing.T) {
	prelude, all := examples(t, "recipes.md")
	if len(all) < 5 {
		t.Fatalf("found %d recipes, want at least 5", len(all))
	}
	bin, root := buildTools(t)
	runAll(t, bin, root, prelude, all)
}

// TestReadme runs every example of README.md as its transcript shows it,
// compares what it prints, and checks it leaves no process running.
func TestReadme(t *testing.T) {
	_, all := examples(t, "../README.md")
	if len(all) < 6 {
		t.Fatalf("found %d examples, want one per tool", len(all))
	}
	for _, ex := range all {
		if !ex.console {
			t.Errorf("example %s: want a ```console transcript", ex.name)
		}
	}
	bin, root := buildTools(t)
	runAll(t, bin, root, "", all)
}

// TestTranscriptLines checks how a transcript is read and compared.
func TestTranscriptLines(t *testing.T) {
	_, all := parseExamples("<!-- example: x -->\n```console\n$ a=1; echo \"$a\" |\n>   cat\nleader 5 term 4 in /tmp/tmp.AbC123xyZ0\n...\nexit 75\n```\n")
	if len(all) != 1 || all[0].script != "a=1; echo \"$a\" |\n  cat\n" || len(all[0].want) != 3 {
		t.Fatalf("parsed %+v", all)
	}
	want := all[0].want
	if re := transcriptLine("lock db2 holder 1/3 token 8589934594 offset -0.5s"); !re.MatchString("lock db2 holder 2/3 token 42 offset 0.25s") || re.MatchString("lock db3 holder 2/3 token 42 offset 0.25s") {
		t.Errorf("%v: a number in a name is part of the name, any other stands for any number", re)
	}
	for _, c := range []struct {
		got []string
		ok  bool
	}{
		{[]string{"leader 3 term 12 in /run/x/tmp.Qq", "exit 75"}, true},
		{[]string{"leader 3 term 12 in /tmp/tmp.Qq", "a", "b", "exit 75"}, true},
		{[]string{"leader 3 term 12 in /tmp/tmp.Qq", "exit 69"}, false},  // exit codes are compared
		{[]string{"leader 3 epoch 12 in /tmp/tmp.Qq", "exit 75"}, false}, // words are compared
		{[]string{"leader 3 term 12 in /tmp/tmp.Qq"}, false},
		{[]string{"exit 75"}, false},
	} {
		if got := matchLines(c.got, want); got != c.ok {
			t.Errorf("%q: matched %v, want %v", c.got, got, c.ok)
		}
	}
	if got := withoutWaitReports([]string{"lockd: waited 1s for backup: not held", "backing up", "ticketd: waited 16s for a ticket: busy", "ticketd: WARN the host is starving its processes: leased commands will be killed earlier kill_slack=40ms"}); len(got) != 1 || got[0] != "backing up" {
		t.Errorf("withoutWaitReports kept %q", got)
	}
	if re := transcriptLine("sample 1 offset -0.000033s delay 0.000110s"); !re.MatchString("sample 2 offset +0.000005s delay 0.000082s") {
		t.Errorf("%v does not match an offset of the other sign", re)
	}
}

// TestLeftoverProcess plants an example that leaves a process running
// and checks the run reports it, and ends it.
func TestLeftoverProcess(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	defer func(g time.Duration) { leftoverGrace = g }(leftoverGrace)
	leftoverGrace = time.Second
	ex := example{name: "leak", console: true, script: "setsid sleep 60 </dev/null >/dev/null 2>&1 &\necho started\n"}
	_, err := run(t, "/nonexistent", ".", "", ex, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "sleep 60") {
		t.Fatalf("run: %v, want it to name the sleep left running", err)
	}
	ok := example{name: "clean", console: true, script: "sleep 60 </dev/null >/dev/null 2>&1 &\nkill $!; wait\n"}
	if _, err := run(t, "/nonexistent", ".", "", ok, 30*time.Second); err != nil {
		t.Fatalf("an example that stops what it started: %v", err)
	}
}

// TestClusterWaitAndPorts checks the two scripts/cluster.sh commands the
// README's examples lean on: ports writes a peers file of distinct free
// loopback ports and starts nothing; wait returns once every member has
// ended by itself, and exits 75 when one has not by its deadline.
func TestClusterWaitAndPorts(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root, _ := filepath.Abs("..")
	script := filepath.Join(root, "scripts", "cluster.sh")
	dir := t.TempDir()
	if out, err := exec.Command(script, "ports", "-n", "3", "-d", dir+"/p").CombinedOutput(); err != nil {
		t.Fatalf("ports: %v\n%s", err, out)
	}
	b, err := os.ReadFile(dir + "/p/peers")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		addr, ok := strings.CutPrefix(line, fmt.Sprintf("%d=127.0.0.1:", i+1))
		if !ok || seen[addr] {
			t.Fatalf("peers file:\n%s", b)
		}
		seen[addr] = true
	}
	if len(seen) != 3 {
		t.Fatalf("peers file:\n%s", b)
	}
	if pids, _ := filepath.Glob(dir + "/p/*.pid"); len(pids) > 0 {
		t.Fatalf("ports started members: %v", pids)
	}

	// A member that becomes ready, then sleeps for as long as its
	// first argument says.
	member := filepath.Join(dir, "member")
	body := "#!/bin/sh\nwhile [ $# -gt 0 ]; do case $1 in --ready-file) echo up >\"$2\"; shift 2;; --for) s=$2; shift 2;; *) shift;; esac; done\nexec sleep \"$s\"\n"
	if err := os.WriteFile(member, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cluster := func(env []string, args ...string) (int, string) {
		cmd := exec.Command(script, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := cluster(nil, "start", "-n", "2", "-d", dir+"/a", member, "--for", "0.{id}"); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	if code, out := cluster(nil, "wait", "-d", dir+"/a"); code != 0 {
		t.Fatalf("wait for members that end: exit %d\n%s", code, out)
	}
	for _, i := range []string{"1", "2"} {
		if _, err := os.Stat(dir + "/a/" + i + ".exit"); err != nil {
			t.Errorf("wait returned before member %s ended: %v", i, err)
		}
	}
	if code, out := cluster(nil, "start", "-n", "1", "-d", dir+"/b", member, "--for", "60"); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	defer cluster(nil, "stop", "-d", dir+"/b")
	if code, out := cluster([]string{"CLUSTER_WAIT_TIMEOUT=1"}, "wait", "-d", dir+"/b"); code != 75 || !strings.Contains(out, "member 1 still running") {
		t.Fatalf("wait for a member that does not end: exit %d, want 75\n%s", code, out)
	}
}

// TestClusterEndedMember: once a member has ended (its keeper wrote
// DIR/ID.exit), scripts/cluster.sh never signals its PID again, nor takes
// it for a live member: the kernel may have given that PID to another
// process since (pid_max is 32768 on many hosts, so it wraps within hours
// on a busy one). A process of the test's own stands for that other
// process: it is given the ended member's pid file, and ps, kill, stop
// and start must all leave it alone.
func TestClusterEndedMember(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root, _ := filepath.Abs("..")
	script := filepath.Join(root, "scripts", "cluster.sh")
	dir := t.TempDir()
	member := filepath.Join(dir, "member")
	body := "#!/bin/sh\nwhile [ $# -gt 0 ]; do case $1 in --ready-file) echo up >\"$2\"; shift 2;; --for) s=$2; shift 2;; *) shift;; esac; done\nexec sleep \"$s\"\n"
	if err := os.WriteFile(member, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	c := dir + "/c"
	cluster := func(cmd string, args ...string) (int, string) {
		if cmd == "kill" { // the member's ID comes first
			args = append(args[:1:1], append([]string{"-d", c}, args[1:]...)...)
		} else {
			args = append([]string{"-d", c}, args...)
		}
		out, err := exec.Command(script, append([]string{cmd}, args...)...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := cluster("start", "-n", "2", member, "--for", "0.{id}"); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	if code, out := cluster("wait"); code != 0 {
		t.Fatalf("wait: exit %d\n%s", code, out)
	}
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { other.Wait(); close(exited) }()
	defer func() { other.Process.Kill(); <-exited }()
	if err := os.WriteFile(c+"/1.pid", []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	alive := func(step string) {
		t.Helper()
		select {
		case <-exited:
			t.Fatalf("%s: the process that now has member 1's PID was killed", step)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if code, out := cluster("ps"); code != 0 || !strings.Contains(out, "member 1 pid "+strconv.Itoa(other.Process.Pid)+" dead") {
		t.Fatalf("ps: exit %d, want member 1 dead:\n%s", code, out)
	}
	if code, out := cluster("kill", "1"); code != 69 || !strings.Contains(out, "member 1 has ended") {
		t.Errorf("kill 1: exit %d, want 69 and a message:\n%s", code, out)
	}
	alive("kill 1")
	if code, out := cluster("stop"); code != 0 {
		t.Errorf("stop: exit %d\n%s", code, out)
	}
	alive("stop")
	if code, out := cluster("start", "-n", "1", member, "--for", "60"); code != 0 {
		t.Fatalf("start on a directory whose members have ended: exit %d\n%s", code, out)
	}
	if code, out := cluster("stop"); code != 0 {
		t.Errorf("stop: exit %d\n%s", code, out)
	}
	alive("second stop")
}
