// Package docs holds the test that runs docs/recipes.md.
package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

type recipe struct {
	name   string
	script string
	want   []*regexp.Regexp // what it prints, line by line
}

var block = regexp.MustCompile("(?s)(?:<!-- recipe: ([a-z-]+) -->\n)?```sh\n(.*?)```")

// recipes reads docs/recipes.md: the first block is every recipe's
// prelude; each block marked "<!-- recipe: NAME -->" is a recipe, whose
// "#> " lines are the lines it prints (regular expressions).
func recipes(t *testing.T) (prelude string, out []recipe) {
	b, err := os.ReadFile("recipes.md")
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range block.FindAllStringSubmatch(string(b), -1) {
		if i == 0 {
			prelude = m[2]
			continue
		}
		if m[1] == "" {
			continue
		}
		r := recipe{name: m[1]}
		for _, line := range strings.Split(m[2], "\n") {
			if want, ok := strings.CutPrefix(line, "#> "); ok {
				r.want = append(r.want, regexp.MustCompile("^"+want+"$"))
			} else {
				r.script += line + "\n"
			}
		}
		out = append(out, r)
	}
	return prelude, out
}

// TestRecipes runs every recipe of docs/recipes.md with the tools built
// from this checkout, and compares what it prints.
func TestRecipes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clusters")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	prelude, all := recipes(t)
	if len(all) < 5 {
		t.Fatalf("found %d recipes, want at least 5", len(all))
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin+"/", "../cmd/...").CombinedOutput(); err != nil {
		t.Fatalf("building the tools: %v\n%s", err, out)
	}
	root, _ := filepath.Abs("..")
	for _, r := range all {
		t.Run(r.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", "set -eu\n"+prelude+r.script)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "NO_COLOR=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
			}
			got := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
			if len(got) != len(r.want) {
				t.Fatalf("printed %d lines, want %d:\n%s\nstderr:\n%s", len(got), len(r.want), out, stderr.String())
			}
			for i, w := range r.want {
				if !w.MatchString(got[i]) {
					t.Errorf("line %d: %q, want %q", i+1, got[i], w)
				}
			}
		})
	}
}
