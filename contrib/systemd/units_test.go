// Package systemd holds the test of the unit files beside it and of the
// units docs/recipes.md and docs/systemd.md show.
package systemd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var tools = []string{"lockd", "ticketd", "elect", "clocksync"}

// units returns every unit this directory ships, and every ```ini block
// of the docs that is a unit (it has a [Service] section), by file name.
func units(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	files, _ := filepath.Glob("*.service")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	if len(out) < 4 {
		t.Fatalf("only %d unit files here", len(out))
	}
	// In the docs a unit's block starts with a comment naming its file.
	named := regexp.MustCompile("(?s)```ini\n# ([a-z@.-]+\\.service)\n(.*?)```")
	for _, doc := range []string{"../../docs/recipes.md", "../../docs/systemd.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range named.FindAllStringSubmatch(string(b), -1) {
			out["doc-"+m[1]] = m[2]
		}
	}
	return out
}

// TestUnitsVerify: every unit passes `systemd-analyze verify` without a
// warning, with the tools built where the units expect /usr/bin (verify
// checks that ExecStart= is executable), and every TOOL_* variable a unit
// sets is one its tool reads.
func TestUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Geteuid() != 0 {
			t.Skip("systemd-analyze not installed (Debian package systemd; scripts/test.sh installs it as root)")
		}
		t.Fatal("systemd-analyze not installed: scripts/test.sh installs the Debian package systemd")
	}
	bin := t.TempDir()
	for _, tool := range tools {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, tool), "../../cmd/"+tool).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", tool, err, out)
		}
	}
	// The docs' units run an application from /usr/local/bin: stand-ins.
	local := t.TempDir()
	stub := regexp.MustCompile(`/usr/local/bin/([a-z-]+)`)
	dir := t.TempDir()
	var paths []string
	for name, text := range units(t) {
		for _, m := range stub.FindAllStringSubmatch(text, -1) {
			if err := os.WriteFile(filepath.Join(local, m[1]), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		text = strings.ReplaceAll(text, "/usr/local/bin/", local+"/")
		text = strings.ReplaceAll(text, "/usr/bin/", bin+"/")
		if strings.HasSuffix(name, "@.service") {
			name = strings.TrimSuffix(name, "@.service") + "@example.service" // an instance
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		checkEnv(t, name, text, bin)
	}
	slices.Sort(paths)
	cmd := exec.Command(analyze, append([]string{"verify", "--man=no"}, paths...)...)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=notice", "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	var ours []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, dir) || slices.ContainsFunc(paths, func(p string) bool { return strings.Contains(l, filepath.Base(p)) }) {
			ours = append(ours, l)
		}
	}
	if err != nil || len(ours) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	t.Logf("verified %d units", len(paths))
}

var toolVar = regexp.MustCompile(`\b(LOCKD|TICKETD|ELECT|CLOCKSYNC)_[A-Z_]+\b`)

// childVars are given to a child command, not read by the tool.
var childVars = []string{"ELECT_TERM", "ELECT_FENCE", "LOCKD_TOKEN", "TICKETD_TICKET", "TICKETD_EPOCH"}

// checkEnv fails the test for a TOOL_* variable in a unit (set, or shown
// in its comments) that no flag of the command it runs reads.
func checkEnv(t *testing.T, name, text, bin string) {
	t.Helper()
	help := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		_, rest, ok := strings.Cut(line, "=")
		if ok && (strings.HasPrefix(line, "ExecStart=") || strings.HasPrefix(line, "ExecStartPre=")) {
			f := strings.Fields(strings.TrimLeft(rest, "+-@!:"))
			if len(f) >= 2 && strings.HasPrefix(f[0], bin) {
				tool := filepath.Base(f[0])
				out, err := exec.Command(f[0], f[1], "--help").CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %s %s --help: %v\n%s", name, tool, f[1], err, out)
				}
				help[strings.ToUpper(tool)] += string(out)
			}
		}
	}
	for _, v := range toolVar.FindAllString(text, -1) {
		prefix, _, _ := strings.Cut(v, "_")
		h, ok := help[prefix]
		if !ok || slices.Contains(childVars, v) {
			continue // another tool's variable (a client's, in a comment)
		}
		if !strings.Contains(h, "$"+v+"]") && !strings.Contains(h, "$"+v+",") {
			t.Errorf("%s: %s is not a variable of the command it runs", name, v)
		}
	}
}

// TestUnitsUnderSystemd runs scripts/systemd-ns.sh: lockd.service and
// elect@.service as shipped, under a real systemd as PID 1 of a private
// namespace (docs/systemd.md, "Tests"). It needs root; it is skipped
// without, or when the script finds a prerequisite missing (exit 69).
func TestUnitsUnderSystemd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: scripts/systemd-ns.sh mounts and starts systemd")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	cmd := exec.Command("../../scripts/systemd-ns.sh")
	out, err := runLimited(cmd, 4*time.Minute)
	if code := cmd.ProcessState.ExitCode(); code == 69 {
		t.Skipf("scripts/systemd-ns.sh: a prerequisite is missing:\n%s", out)
	}
	if err != nil {
		t.Fatalf("scripts/systemd-ns.sh: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// runLimited runs cmd, killing it after limit.
func runLimited(cmd *exec.Cmd, limit time.Duration) ([]byte, error) {
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return []byte(buf.String()), err
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		return []byte(buf.String()), fmt.Errorf("still running after %v", limit)
	}
}
