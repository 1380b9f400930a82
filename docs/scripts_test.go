package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeBin writes executable shell scripts named after the keys into a
// temporary directory and returns it, to be put first on PATH.
func fakeBin(t *testing.T, cmds map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range cmds {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sourceLib runs body in bash after sourcing scripts/lib.sh, with fake
// commands first on PATH, and returns its output.
func sourceLib(t *testing.T, fakes string, body string) (string, error) {
	t.Helper()
	lib, err := filepath.Abs("../scripts/lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", ". "+lib+"\n"+body)
	cmd.Env = append(os.Environ(), "PATH="+fakes+":/usr/bin:/bin", "ROUNDTABLE_BIN=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestLibAptInstall: apt_install runs apt-get update once per script and
// then installs without recommended packages, as root; without root or
// sudo it installs nothing, names the packages and fails.
func TestLibAptInstall(t *testing.T) {
	log := filepath.Join(t.TempDir(), "apt.log")
	root := fakeBin(t, map[string]string{
		"id":      `echo 0`,
		"apt-get": `echo "$*" >>` + log,
		"go":      `exit 1`,
	})
	if out, err := sourceLib(t, root, "apt_install pkg-a pkg-b && apt_install pkg-c"); err != nil {
		t.Fatalf("apt_install as root: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(log)
	want := "update -qq\ninstall -y -qq --no-install-recommends pkg-a pkg-b\ninstall -y -qq --no-install-recommends pkg-c\n"
	if string(got) != want {
		t.Errorf("apt-get calls:\n%s\nwant:\n%s", got, want)
	}

	os.Remove(log)
	user := fakeBin(t, map[string]string{
		"id":      `echo 1000`,
		"sudo":    `exit 1`,
		"apt-get": `echo "$*" >>` + log,
		"go":      `exit 1`,
	})
	out, err := sourceLib(t, user, "apt_install pkg-a")
	if err == nil {
		t.Fatalf("apt_install without root or sudo succeeded:\n%s", out)
	}
	if !strings.Contains(out, "please install (as root): apt-get install pkg-a") {
		t.Errorf("no clear message without root: %q", out)
	}
	if _, err := os.Stat(log); err == nil {
		t.Error("apt-get ran without root or sudo")
	}
}

// TestLibBuildTools: build_tools builds ./cmd/... once per script with
// go's default flags (what `go install` makes), and with ROUNDTABLE_BIN
// uses that directory without building.
func TestLibBuildTools(t *testing.T) {
	log := filepath.Join(t.TempDir(), "go.log")
	fakes := fakeBin(t, map[string]string{
		"go": `[ "$1" = env ] && exit 0
echo "$*" >>` + log + `
touch "$3/lockd"; chmod +x "$3/lockd"`,
	})
	dir := t.TempDir()
	out, err := sourceLib(t, fakes, `build_tools `+dir+` && build_tools `+dir+` && echo "bin=$bin"`)
	if err != nil {
		t.Fatalf("build_tools: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(log)
	if want := "build -o " + dir + "/ ./cmd/...\n"; string(got) != want {
		t.Errorf("go calls:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(out, "bin="+dir) {
		t.Errorf("bin not set to %s: %q", dir, out)
	}

	os.Remove(log)
	out, err = sourceLib(t, fakes, `ROUNDTABLE_BIN=/opt/other build_tools `+dir+` && echo "bin=$bin"`)
	if err != nil || !strings.Contains(out, "bin=/opt/other") {
		t.Errorf("build_tools with ROUNDTABLE_BIN: %v %q", err, out)
	}
	if _, err := os.Stat(log); err == nil {
		t.Error("build_tools built although ROUNDTABLE_BIN was set")
	}
}

// TestScriptsShareLib: every script parses, only lib.sh calls apt-get or
// builds the tools (release.sh excepted: it cross-compiles static,
// version-stamped release binaries), and every bench script sources lib.sh.
func TestScriptsShareLib(t *testing.T) {
	scripts, err := filepath.Glob("../scripts/*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	aptCall := regexp.MustCompile(`(^|[;&|(]\s*|\s)apt-get (update|install)`)
	goBuild := regexp.MustCompile(`go build .*\./cmd/`)
	for _, s := range scripts {
		name := filepath.Base(s)
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("%s does not parse: %v\n%s", name, err, out)
		}
		if name == "lib.sh" {
			continue
		}
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			code := strings.TrimSpace(line)
			if strings.HasPrefix(code, "#") || strings.Contains(code, "echo ") || strings.Contains(code, "die ") {
				continue
			}
			if aptCall.MatchString(code) {
				t.Errorf("%s:%d calls apt-get itself; use lib.sh's apt_install", name, i+1)
			}
			if goBuild.MatchString(code) && name != "release.sh" {
				t.Errorf("%s:%d builds the tools itself; use lib.sh's build_tools", name, i+1)
			}
		}
		if strings.HasPrefix(name, "bench-") && !strings.Contains(string(b), `. "$(dirname "$0")/lib.sh"`) {
			t.Errorf("%s does not source lib.sh", name)
		}
	}
}
