package cli

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestListenControl(t *testing.T) {
	// A directory that does not exist is a usage error, not created.
	var ee *ExitError
	if _, err := ListenControl("x", filepath.Join(t.TempDir(), "sub", "x.sock")); !errors.As(err, &ee) || ee.Code != ExitUsage {
		t.Fatalf("socket in a missing directory: %v, want exit %d", err, ExitUsage)
	}
	path := filepath.Join(t.TempDir(), "x.sock")
	ln, err := ListenControl("x", path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	// A live daemon's socket is never taken over.
	if _, err := ListenControl("x", path); !errors.As(err, &ee) || ee.Code != ExitBusy {
		t.Fatalf("second listener on a live socket: %v, want exit %d", err, ExitBusy)
	}
	// A stale socket file (its daemon gone) is replaced.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket file should still exist for this test: %v", err)
	}
	ln2, err := ListenControl("x", path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln2.Close()
	if _, err := ListenControl("x", ""); !errors.As(err, &ee) || ee.Code != ExitUsage {
		t.Fatalf("empty path: %v, want exit %d", err, ExitUsage)
	}
}

func TestMain(m *testing.M) {
	RunWatchdog() // StartLeased re-executes this test binary
	realtimeHelper()
	if path := os.Getenv("RT_TEST_SERVE_SOCKET"); path != "" {
		// A squatter: serves path as whoever runs it (nobody, below).
		ln, err := net.Listen("unix", path)
		if err != nil {
			os.Exit(3)
		}
		os.Chmod(path, 0o777)
		// Ready: the socket file exists from bind, before listen.
		if os.WriteFile(path+".ready", nil, 0o644) != nil {
			os.Exit(3)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(0)
			}
			c.Write([]byte(`{"event":"acquired","name":"db","token":1}` + "\n"))
		}
	}
	os.Exit(m.Run())
}

// TestListenControlLeavesOthersAlone: a file or a directory at the socket's
// path is a usage error and is left as it is.
func TestListenControlLeavesOthersAlone(t *testing.T) {
	dir := t.TempDir()
	file, sub := filepath.Join(dir, "file"), filepath.Join(dir, "sub")
	os.WriteFile(file, []byte("precious"), 0o644)
	os.Mkdir(sub, 0o755)
	for _, p := range []string{file, sub} {
		if _, err := ListenControl("x", p); Code(err) != ExitUsage {
			t.Errorf("%s: %v, want exit 64", p, err)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "precious" {
		t.Error("the file was touched")
	}
	if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
		t.Error("the directory was removed")
	}
}

// TestPrivateDir: without XDG_RUNTIME_DIR the default socket lives in a
// directory of this user's, mode 0700, created on first use; one open to
// others is refused.
func TestPrivateDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", t.TempDir())
	path := DefaultSocket("x")
	if filepath.Dir(path) != PrivateDir() {
		t.Fatalf("default socket %s is not in %s", path, PrivateDir())
	}
	ln, err := ListenControl("x", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if fi, err := os.Stat(PrivateDir()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("private directory: %v %v", fi.Mode(), err)
	}
	os.Chmod(PrivateDir(), 0o777)
	if _, err := ListenControl("x", path); Code(err) != ExitNoPerm {
		t.Fatalf("a private directory open to others: %v, want exit 77", err)
	}
}

// TestDialRefusesStrangers: a client does not trust a socket served by
// another user (here nobody), which could hand out grants of its own.
func TestDialRefusesStrangers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a server as another user")
	}
	cmd, dir := asNobody(t, "rt-squatter", 0o777) // nobody creates its socket in dir
	path := filepath.Join(dir, "x.sock")
	cmd.Env = append(os.Environ(), "RT_TEST_SERVE_SOCKET="+path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path + ".ready"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the squatter never listened")
		}
		time.Sleep(5 * time.Millisecond) // polling for the other process's ready file
	}
	if _, err := DialControl("x", path); Code(err) != ExitNoPerm {
		t.Fatalf("a socket served by nobody: %v, want exit 77", err)
	}
}

// asNobody copies this test binary into a new directory that user nobody
// can reach (a t.TempDir's parent is closed to it), with the directory's
// mode, and returns a command that runs the copy as nobody, and the
// directory. The caller, root, sets its arguments and environment.
func asNobody(t *testing.T, prefix string, mode os.FileMode) (*exec.Cmd, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helper")
	if b, err := os.ReadFile(self); err != nil || os.WriteFile(bin, b, 0o755) != nil {
		t.Fatalf("copying the test binary: %v", err)
	}
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	return cmd, dir
}
