package sim

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Diff shows how got differs from want, line by line ("-" only in want,
// "+" only in got), with up to two lines of context around each change;
// "" when they are equal.
func Diff(want, got string) string {
	if want == got {
		return ""
	}
	a := strings.Split(want, "\n")
	b := strings.Split(got, "\n")
	// Longest common subsequence, table from the ends.
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		mark byte
		line string
		n    int // line number in want (or got for '+')
	}
	var ops []op
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], i + 1})
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, op{'+', b[j], j + 1})
			j++
		default:
			ops = append(ops, op{'-', a[i], i + 1})
			i++
		}
	}
	var sb strings.Builder
	last := -1
	for k, o := range ops {
		near := false
		for d := max(0, k-2); d <= min(len(ops)-1, k+2); d++ {
			near = near || ops[d].mark != ' '
		}
		if !near {
			continue
		}
		if last >= 0 && k > last+1 {
			sb.WriteString("...\n")
		}
		if o.mark != ' ' && (k == 0 || ops[k-1].mark == ' ') {
			fmt.Fprintf(&sb, "@ line %d\n", o.n)
		}
		fmt.Fprintf(&sb, "%c %s\n", o.mark, o.line)
		last = k
	}
	return sb.String()
}

// T is the part of testing.TB that Transcripts uses.
type T interface {
	Helper()
	Name() string
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Transcripts plays every transcript matching pattern (a filepath.Glob)
// with play, usually a Scenario's RunFile, and fails t with a diff for each
// one whose output differs. It fails when no file matches.
func Transcripts(t T, pattern string, play func(path string) (got, want string, err error)) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts match %s (%v)", pattern, err)
	}
	for _, f := range files {
		got, want, err := play(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if d := Diff(want, got); d != "" {
			t.Errorf("%s: the output differs (go test -run '%s' -rewrite accepts it):\n%s", f, t.Name(), d)
		}
	}
}
