package proc

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"unsafe"
)

// Handover replaces this process with the program name, found beside this
// process's own executable or else in $PATH, passing the same arguments
// (argv[0] included, so the program's messages keep the name the user
// typed) and the same environment. The process keeps its ID, its
// descriptors and its parent, so to whoever started it nothing changed.
//
// A tool whose common, short-lived command lines are served by a small
// front binary hands every other command line to the complete program
// this way. Handover returns only on failure: an ExitError with code 69
// when name is found nowhere, 126 when it cannot be executed.
func Handover(name string) error {
	path, err := sibling(name)
	if err != nil {
		return err
	}
	err = syscall.Exec(path, os.Args, os.Environ())
	return Exitf(ExitCannotExec, "%s: %v", path, err)
}

// sibling finds name in the directory of this process's executable
// (/proc/self/exe, symbolic links resolved, so a link to the front binary
// in another directory still finds the program installed beside it), or
// else in $PATH as lookPath searches it.
func sibling(name string) (string, error) {
	where := "in $PATH"
	if self, err := os.Readlink("/proc/self/exe"); err == nil {
		if i := strings.LastIndexByte(self, '/'); i >= 0 {
			p := self[:i+1] + name
			if executable(p) == nil {
				return p, nil
			}
			where = "in " + self[:i+1] + " or in $PATH"
		}
	}
	p, err := lookPath(name)
	if err == nil {
		return p, nil
	}
	if errors.Is(err, errNotFound) || errors.Is(err, os.ErrNotExist) {
		return "", Exitf(ExitUnavailable, "%s not found %s", name, where)
	}
	return "", Exitf(ExitUnavailable, "%s not found %s: %v", name, where, err)
}

// SetName sets the process's name (its comm: what ps -C, pgrep and pkill
// match, which the kernel takes from the executable's file name) to the
// last element of argv[0]. In a program that Handover started, argv[0] is
// the name the user typed, so a daemon started as `lockd serve` is still
// found by `pgrep -x lockd`. It names the calling thread, so call it from
// an init function, which runs on the main thread. The kernel keeps 15
// bytes of a name.
func SetName() {
	name := os.Args[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if name == "" {
		return
	}
	b := make([]byte, 16)
	copy(b[:15], name)
	syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0)
}
