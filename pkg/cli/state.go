package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultStateFile is where a daemon keeps a state file unless told
// otherwise: name in the directory DefaultSocket uses ($XDG_RUNTIME_DIR,
// else PrivateDir), private to the user. WriteUint creates PrivateDir.
func DefaultStateFile(name string) string {
	return filepath.Join(filepath.Dir(DefaultSocket("x")), name)
}

// ReadUint reads a number kept in a state file (a --state-file holding the
// highest term seen): its first number. A missing file or an empty path
// reads as 0.
func ReadUint(path string) (uint64, error) {
	v, err := ReadUints(path, 1)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// ReadUints reads the first n numbers kept in a state file, separated by
// spaces; a missing file, an empty path, or numbers the file does not have
// (it was written with fewer) read as 0.
func ReadUints(path string, n int) ([]uint64, error) {
	v := make([]uint64, n)
	if path == "" {
		return v, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return v, nil
	}
	if err != nil {
		return nil, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	for i := 0; i < n && i < len(f); i++ {
		if v[i], err = strconv.ParseUint(f[i], 10, 64); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return v, nil
}

// WriteUints stores numbers durably, space-separated on one line, as
// WriteUint does.
func WriteUints(path string, vs ...uint64) error {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.FormatUint(v, 10)
	}
	return writeLine(path, strings.Join(s, " "))
}

// WriteUint stores a number durably: written to a temporary file, synced,
// then renamed over path, so a crash leaves the old or the new value.
func WriteUint(path string, v uint64) error { return writeLine(path, strconv.FormatUint(v, 10)) }

func writeLine(path, line string) error {
	if path == "" {
		return nil
	}
	if filepath.Dir(path) == PrivateDir() {
		if err := ensurePrivateDir(PrivateDir()); err != nil {
			return err
		}
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
