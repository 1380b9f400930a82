package cpuprof

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// TestStart: no file, no profile; a file that cannot be created is a
// usage error naming the variable; a profile is written and stopped.
func TestStart(t *testing.T) {
	stop, err := Start("X", "")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := Start("X_PROFILE", "/nonexistent/dir/p"); cli.Code(err) != cli.ExitUsage || !strings.Contains(err.Error(), "X_PROFILE") {
		t.Fatalf("unwritable file: %v, want exit 64 naming X_PROFILE", err)
	}
	file := filepath.Join(t.TempDir(), "p")
	stop, err = Start("X", file)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if st, err := os.Stat(file); err != nil || st.Size() == 0 {
		t.Fatalf("profile: %v", err)
	}
}
