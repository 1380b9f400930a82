package mcastd

import (
	"runtime"
	"testing"
)

// TestOneP: a member runs on one P unless GOMAXPROCS is set, and then on
// what it says.
func TestOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(3)
	t.Setenv("GOMAXPROCS", "")
	if got := oneP(); got != 1 {
		t.Errorf("GOMAXPROCS unset: the member runs on %d Ps, want 1", got)
	}
	runtime.GOMAXPROCS(3) // as the runtime set it from GOMAXPROCS=3
	t.Setenv("GOMAXPROCS", "3")
	if got := oneP(); got != 3 {
		t.Errorf("GOMAXPROCS=3: the member runs on %d Ps, want 3", got)
	}
}
