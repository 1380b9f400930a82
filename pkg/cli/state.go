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
// highest term seen). A missing file or an empty path reads as 0.
func ReadUint(path string) (uint64, error) {
	if path == "" {
		return 0, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// WriteUint stores a number durably: written to a temporary file, synced,
// then renamed over path, so a crash leaves the old or the new value.
func WriteUint(path string, v uint64) error {
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
	if _, err := fmt.Fprintln(f, v); err != nil {
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
