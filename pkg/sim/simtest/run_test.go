package simtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestReplay: the replay command names this package from the module's
// root and anchors each part of the test's name.
func TestReplay(t *testing.T) {
	want := "go test ./pkg/sim/simtest -run '^TestReplay$' -seed 7"
	if got := Replay(t, 7); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	t.Run("a b.c", func(t *testing.T) {
		want := `go test ./pkg/sim/simtest -run '^TestReplay$/^a_b\.c$' -seed 9`
		if got := Replay(t, 9); got != want {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}

// TestCatchCounts: only errors with one of the wanted verdicts count; with
// none wanted, any error does; stop ends at the first.
func TestCatchCounts(t *testing.T) {
	run := func(seed uint64) error {
		switch seed % 3 {
		case 0:
			return errors.New("two holders")
		case 1:
			return errors.New("liveness")
		}
		return nil
	}
	if n, first := catch(9, run, []string{"two holders"}, false); n != 3 || !strings.HasPrefix(first.Error(), "seed 3:") {
		t.Fatalf("got %d, %v", n, first)
	}
	if n, _ := catch(9, run, nil, false); n != 6 {
		t.Fatalf("any error: got %d", n)
	}
	if n, first := catch(9, run, []string{"holders", "liveness"}, true); n != 1 || !strings.HasPrefix(first.Error(), "seed 1:") {
		t.Fatalf("stop: got %d, %v", n, first)
	}
	if n, _ := catch(9, run, []string{"went from"}, false); n != 0 {
		t.Fatalf("a verdict no run gives: got %d", n)
	}
}

// TestAtLeast: fewer seeds than asked become 1..n; -seed alone stays.
func TestAtLeast(t *testing.T) {
	defer func(n int, s uint64) { *seedCount, *seedOnly = n, s }(*seedCount, *seedOnly)
	*seedCount, *seedOnly = 3, 0
	if got := AtLeast(5); !slices.Equal(got, []uint64{1, 2, 3, 4, 5}) {
		t.Fatalf("got %v", got)
	}
	*seedCount = 7
	if got := AtLeast(5); len(got) != 7 {
		t.Fatalf("got %v", got)
	}
	*seedOnly = 42
	if got := AtLeast(5); !slices.Equal(got, []uint64{42}) {
		t.Fatalf("got %v", got)
	}
	var ran []uint64
	if n := EverySeedOf(t, []uint64{4, 5}, func(seed uint64) error { ran = append(ran, seed); return nil }); n != 2 || fmt.Sprint(ran) != "[4 5]" {
		t.Fatalf("EverySeedOf ran %v (%d)", ran, n)
	}
}
