// Package scenariotest plays a protocol package's transcripts in its
// tests: the -rewrite flag, the loop over testdata/*.txt, the loop that
// plays each planted bug against the transcript that must catch it, and
// golden files compared the same way. Only tests import it:
//
//	func TestScenarioTranscripts(t *testing.T) {
//		scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), play)
//	}
//
// The flag lives here, not in pkg/sim, so that no production binary that
// links the simulator carries it.
package scenariotest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/sim"
)

var rewrite = flag.Bool("rewrite", false, "write the output of the transcripts and golden files in testdata/ back into them")

// Transcripts plays every transcript matching pattern (a filepath.Glob)
// with play, rewrite true under -rewrite, and fails t with a diff for each
// one whose output differs from its file (sim.Transcripts). play is
// usually a Scenario's RunFile.
func Transcripts(t *testing.T, pattern string, play func(path string, rewrite bool) (got, want string, err error)) {
	t.Helper()
	sim.Transcripts(t, pattern, func(path string) (string, string, error) { return play(path, *rewrite) })
}

// Bug is a planted bug and the transcript that must catch it.
type Bug[P any] struct {
	Name  string // the bug, as docs/testing.md names it; the subtest's name
	File  string // the transcript, in testdata/
	Plant P      // what switches the bug on, handed to play
	Shows string // in the output with the bug: a checker's verdict, or the changed line
}

// CatchPlanted plays each bug's transcript with play (the bug switched
// on; never rewriting the file), one subtest per bug, and fails the
// subtest unless the output differs from the file and contains Shows.
func CatchPlanted[P any](t *testing.T, play func(path string, plant P) (got, want string, err error), bugs []Bug[P]) {
	t.Helper()
	for _, b := range bugs {
		t.Run(b.Name, func(t *testing.T) {
			if err := catch(b, play); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s caught by %s: %q", b.Name, b.File, b.Shows)
		})
	}
}

// Plant is CatchPlanted's play for a package whose scenario takes the
// planted bug: it builds the scenario with the bug and plays the file.
func Plant[P, M any](scenario func(plant P) *sim.Scenario[M]) func(path string, plant P) (got, want string, err error) {
	return func(path string, plant P) (string, string, error) { return scenario(plant).RunFile(path, false) }
}

func catch[P any](b Bug[P], play func(path string, plant P) (got, want string, err error)) error {
	got, want, err := play(filepath.Join("testdata", b.File), b.Plant)
	if err != nil {
		return err
	}
	if got == want || !strings.Contains(got, b.Shows) {
		return fmt.Errorf("%s does not catch %s (want %q in the output):\n%s", b.File, b.Name, b.Shows, sim.Diff(want, got))
	}
	return nil
}

// Golden compares got with the file at path and fails t with a diff when
// they differ; under -rewrite it writes got to the file first.
func Golden(t *testing.T, path, got string) {
	t.Helper()
	if err := golden(path, got, *rewrite); err != nil {
		t.Fatalf("%v (go test -run '%s' -rewrite accepts it)", err, t.Name())
	}
}

func golden(path, got string, rewrite bool) error {
	if rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			return err
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if d := sim.Diff(string(want), got); d != "" {
		return fmt.Errorf("%s: the output differs:\n%s", path, d)
	}
	return nil
}
