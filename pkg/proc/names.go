package proc

import (
	"os"
	"strings"
)

// Env is the environment variable for a flag of a tool: ("elect",
// "key-file") → ELECT_KEY_FILE.
func Env(tool, flag string) string {
	return strings.ToUpper(tool + "_" + strings.ReplaceAll(flag, "-", "_"))
}

// DefaultSocket is where a tool's daemon listens for local clients unless
// told otherwise: $XDG_RUNTIME_DIR/<tool>.sock, else in the temp directory.
func DefaultSocket(tool string) string {
	// (Joined by hand: path/filepath would cost quick clients its place in
	// the initialisation order; see lookPath.)
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	return strings.TrimRight(dir, "/") + "/" + tool + ".sock"
}
