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
// none wanted, any error does; a run stops once enough were caught.
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
	if n, runs, first := catch(9, 0, "seed", run, []string{"two holders"}); n != 3 || runs != 9 || !strings.HasPrefix(first.Error(), "seed 3:") {
		t.Fatalf("got %d of %d, %v", n, runs, first)
	}
	if n, _, _ := catch(9, 0, "seed", run, nil); n != 6 {
		t.Fatalf("any error: got %d", n)
	}
	if n, runs, first := catch(9, 1, "seed", run, []string{"holders", "liveness"}); n != 1 || runs != 1 || !strings.HasPrefix(first.Error(), "seed 1:") {
		t.Fatalf("stop at one: got %d of %d, %v", n, runs, first)
	}
	if n, runs, _ := catch(9, 2, "seed", run, []string{"two holders"}); n != 2 || runs != 6 {
		t.Fatalf("stop at two: got %d of %d runs, want 2 of 6", n, runs)
	}
	if n, runs, _ := catch(9, 2, "seed", run, []string{"went from"}); n != 0 || runs != 9 {
		t.Fatalf("a verdict no run gives: got %d of %d runs", n, runs)
	}
	named := func(i uint64) error { return fmt.Errorf("seed %d (5 members): two holders", i) }
	if _, _, first := catch(9, 1, "seed", named, nil); first.Error() != "seed 1 (5 members): two holders" {
		t.Fatalf("an error that names its seed is prefixed again: %v", first)
	}
	if _, _, first := catch(9, 1, "run", named, nil); first.Error() != "run 1: seed 1 (5 members): two holders" {
		t.Fatalf("a run's error: %v", first)
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
