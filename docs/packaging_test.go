package docs

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

var packagedTools = []string{"clocksync", "consensus", "elect", "lockd", "mcast", "ticketd"}

// TestPackage builds the amd64 package with scripts/release.sh, checks
// what it holds, installs it with dpkg into a scratch root (never into
// this system), and runs the installed tools: each one's --version, the
// bash and fish completions, and `lockd run -- true` against a
// `lockd serve` of the installed lockd (docs/packaging.md).
func TestPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a package")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("packages are tested on linux/amd64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	for _, tool := range []string{"bash", "dpkg", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s (apt-get install dpkg)", tool)
		}
	}
	const version = "v1.4.0-3-g0123abc-dirty"
	const debVersion = "1.4.0+3.g0123abc.dirty"
	t0 := time.Now()
	out := t.TempDir()
	build := exec.Command("../scripts/release.sh", "--arch", "amd64", "--out", out, "--version", version, "--fast")
	printed, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("release.sh: %v\n%s", err, printed)
	}
	t.Logf("release.sh --arch amd64: %v", time.Since(t0).Round(time.Millisecond))
	deb := filepath.Join(out, "roundtable_"+debVersion+"_amd64.deb")
	checkSums(t, out, string(printed), deb, filepath.Join(out, "roundtable_"+debVersion+"_linux_amd64.tar.gz"))

	for field, want := range map[string]string{"Package": "roundtable", "Version": debVersion, "Architecture": "amd64"} {
		if got, err := exec.Command("dpkg-deb", "--field", deb, field).Output(); err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("%s: %q %v, want %q", field, got, err, want)
		}
	}
	contents := debContents(t, deb)
	want := []string{"/usr/share/doc/roundtable/README.md", "/usr/share/doc/roundtable/copyright"}
	for _, tool := range packagedTools {
		want = append(want, "/usr/bin/"+tool, "/usr/share/man/man1/"+tool+".1.gz",
			"/usr/share/bash-completion/completions/"+tool, "/usr/share/zsh/vendor-completions/_"+tool,
			"/usr/share/fish/vendor_completions.d/"+tool+".fish")
	}
	units, _ := filepath.Glob("../contrib/systemd/*.service")
	for _, u := range units {
		want = append(want, "/usr/lib/systemd/system/"+filepath.Base(u))
	}
	for _, path := range want {
		owner, ok := contents[path]
		if !ok {
			t.Errorf("dpkg-deb --contents lists no %s", path)
		} else if owner != "root/root" {
			t.Errorf("%s is owned by %s, want root/root", path, owner)
		}
	}

	root := installScratch(t, deb)
	bin := filepath.Join(root, "usr", "bin")
	for _, tool := range packagedTools {
		got, err := exec.Command(filepath.Join(bin, tool), "--version").Output()
		if want := tool + " version " + version + "\n"; err != nil || string(got) != want {
			t.Errorf("installed %s --version: %q %v, want %q", tool, got, err, want)
		}
	}
	checkStatic(t, filepath.Join(bin, "lockd"))
	checkCompletions(t, root)

	// A daemon and a client, both the installed lockd, on a free
	// loopback port and sockets in the test's own directory.
	dir := t.TempDir()
	lockd := filepath.Join(bin, "lockd")
	clitest.StartCluster(t, dir, 1, lockd, "serve", "--socket", filepath.Join(dir, "{id}.sock"))
	run := exec.Command(lockd, "run", "--socket", filepath.Join(dir, "1.sock"), "--timeout", "30s", "packaged", "--", "true")
	if got, err := run.CombinedOutput(); err != nil {
		t.Fatalf("installed lockd run -- true: %v\n%s", err, got)
	}
	t.Logf("whole test: %v", time.Since(t0).Round(time.Millisecond))
}

// checkSums checks that release.sh printed, and wrote to SHA256SUMS, the
// right sums of the files it names.
func checkSums(t *testing.T, out, printed string, files ...string) {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("release.sh wrote no %s: %v", filepath.Base(f), err)
		}
		sum := sha256.Sum256(b)
		line := hex.EncodeToString(sum[:]) + "  " + filepath.Base(f) + "\n"
		if !strings.Contains(string(sums), line) || !strings.Contains(printed, line) {
			t.Errorf("SHA256SUMS:\n%s\nprinted:\n%s\nwant the line %q in both", sums, printed, line)
		}
	}
}

// debContents maps each file that dpkg-deb --contents lists to its owner.
func debContents(t *testing.T, deb string) map[string]string {
	t.Helper()
	b, err := exec.Command("dpkg-deb", "--contents", deb).Output()
	if err != nil {
		t.Fatalf("dpkg-deb --contents: %v", err)
	}
	files := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		// -rwxr-xr-x root/root   5062840 2026-11-26 15:40 ./usr/bin/lockd
		f := strings.Fields(sc.Text())
		if len(f) >= 6 {
			files[strings.TrimPrefix(f[5], ".")] = f[1]
		}
	}
	return files
}

// installScratch installs deb with dpkg into a new root directory, with
// its own dpkg database, and returns the root.
func installScratch(t *testing.T, deb string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	admin := filepath.Join(root, "var", "lib", "dpkg")
	for _, d := range []string{"info", "updates", "triggers"} {
		if err := os.MkdirAll(filepath.Join(admin, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(admin, "status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// --path-include undoes any path-exclude of this host's dpkg.cfg.d
	// (container images drop man pages and docs).
	install := exec.Command("dpkg", "--root="+root, "--log=/dev/null", "--force-not-root",
		"--force-script-chrootless", "--path-include=*", "-i", deb)
	if out, err := install.CombinedOutput(); err != nil {
		if os.Geteuid() != 0 {
			t.Skipf("dpkg -i into a scratch root as a user other than root: %v\n%s", err, out)
		}
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	status, err := exec.Command("dpkg-query", "--admindir="+admin, "-W", "-f=${Status} ${Version}", "roundtable").Output()
	if err != nil || !strings.HasPrefix(string(status), "install ok installed ") {
		t.Fatalf("dpkg-query in the scratch root: %q %v", status, err)
	}
	return root
}

// checkStatic fails the test when the binary at path asks for a dynamic
// loader or a shared library, or was built with cgo or without -trimpath.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s is dynamically linked (program header %v)", path, p.Type)
		}
	}
	info, err := exec.Command("go", "version", "-m", path).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	for _, want := range []string{"\tbuild\tCGO_ENABLED=0\n", "\tbuild\t-trimpath=true\n"} {
		if !strings.Contains(string(info), want) {
			t.Errorf("go version -m %s has no %q:\n%s", path, strings.TrimSpace(want), info)
		}
	}
}

// checkCompletions asks the installed completion scripts what follows
// "lockd se", with the installed lockd first on PATH.
func checkCompletions(t *testing.T, root string) {
	t.Helper()
	env := append(os.Environ(), "PATH="+filepath.Join(root, "usr", "bin")+":"+os.Getenv("PATH"))
	share := filepath.Join(root, "usr", "share")
	bash := exec.Command("bash", "-c", `source "$1"; COMP_WORDS=(lockd se); COMP_CWORD=1; _lockd_complete; echo "${COMPREPLY[*]}"`,
		"bash", filepath.Join(share, "bash-completion", "completions", "lockd"))
	bash.Env = env
	if got, err := bash.Output(); err != nil || string(got) != "serve session\n" {
		t.Errorf("bash completion of 'lockd se': %q %v, want \"serve session\"", got, err)
	}
	zsh, err := os.ReadFile(filepath.Join(share, "zsh", "vendor-completions", "_lockd"))
	if err != nil || !strings.HasPrefix(string(zsh), "#compdef lockd\n") {
		t.Errorf("zsh completion: %q %v", zsh, err)
	}
	if _, err := exec.LookPath("fish"); err != nil {
		t.Log("no fish: its completion is not run")
		return
	}
	fish := exec.Command("fish", "--no-config", "-c", `source $argv[1]; complete -C 'lockd se'`,
		filepath.Join(share, "fish", "vendor_completions.d", "lockd.fish"))
	fish.Env = env
	fish.Dir = t.TempDir() // an empty directory: no file names among the answers
	if got, err := fish.Output(); err != nil || string(got) != "serve\nsession\n" {
		t.Errorf("fish completion of 'lockd se': %q %v, want serve and session", got, err)
	}
}

// TestReleaseVersion checks the versions scripts/release.sh derives: the
// package's version from the tools' (in dpkg's order, when dpkg is here),
// and the tools' from git describe when no --version is given.
func TestReleaseVersion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	print := func(args ...string) (version, deb string) {
		t.Helper()
		out, err := exec.Command("../scripts/release.sh", append([]string{"--print-version"}, args...)...).Output()
		f := strings.Fields(string(out))
		if err != nil || len(f) != 2 {
			t.Fatalf("release.sh --print-version %v: %q %v", args, out, err)
		}
		return f[0], f[1]
	}
	// In dpkg's order, earliest first.
	order := []struct{ version, deb string }{
		{"notag", "0.0.0~notag"},
		{"v1.2.0-rc1", "1.2.0~rc1"},
		{"v1.2.0-rc1-3-g0123abc", "1.2.0~rc1+3.g0123abc"},
		{"v1.2.0", "1.2.0"},
		{"v1.2.0-5-g0123abc", "1.2.0+5.g0123abc"},
		{"v1.2.0-5-g0123abc-dirty", "1.2.0+5.g0123abc.dirty"},
		{"1.2.1_beta", "1.2.1.beta"},
		{"v1.10.0", "1.10.0"},
	}
	_, noDpkg := exec.LookPath("dpkg")
	for i, c := range order {
		if v, deb := print("--version", c.version); v != c.version || deb != c.deb {
			t.Errorf("--version %s: printed %s %s, want %s %s", c.version, v, deb, c.version, c.deb)
		}
		if i > 0 && noDpkg == nil {
			if err := exec.Command("dpkg", "--compare-versions", order[i-1].deb, "lt", c.deb).Run(); err != nil {
				t.Errorf("dpkg does not order %s before %s", order[i-1].deb, c.deb)
			}
		}
	}
	for _, bad := range []string{"1.0 beta", "1.0;true", ""} {
		cmd := exec.Command("../scripts/release.sh", "--print-version", "--version", bad)
		if out, err := cmd.CombinedOutput(); exitCode(err) != 64 || !strings.Contains(string(out), "--version") {
			t.Errorf("--version %q: %v %s, want exit 64 naming --version", bad, err, out)
		}
	}
	if out, err := exec.Command("../scripts/release.sh", "--arch", "x86").CombinedOutput(); exitCode(err) != 64 || !strings.Contains(string(out), "--arch") {
		t.Errorf("--arch x86: %v %s, want exit 64 naming --arch", err, out)
	}

	describe, err := exec.Command("git", "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): the default version is not checked", err)
	}
	want := strings.TrimSpace(string(describe))
	v, deb := print()
	if v != want {
		t.Errorf("the default version is %s, git describe says %s", v, want)
	}
	if exec.Command("git", "describe", "--tags").Run() != nil {
		commit, dirty := strings.CutSuffix(want, "-dirty")
		wantDeb := "0.0.0+g" + commit
		if dirty {
			wantDeb += ".dirty"
		}
		if deb != wantDeb {
			t.Errorf("without a tag, the package's version is %s, want %s", deb, wantDeb)
		}
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
