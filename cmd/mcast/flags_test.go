package main

import (
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

func TestFlags(t *testing.T) { clitest.CheckFlags(t, newApp()) }

func TestManPage(t *testing.T) { clitest.CheckMan(t, newApp()) }

// TestTimerHelp: --period and --suspect show the defaults each kind of
// group uses (pkg/mcast's and pkg/mcast/group's TestTimerDefaults check those).
func TestTimerHelp(t *testing.T) {
	want := map[string][]string{"period": {"50ms", "20ms with --views"}, "suspect": {"20 × --period (1s)", "8 × --period (160ms)"}}
	for _, f := range runFlags {
		d, ok := f.(*ucli.DurationFlag)
		if !ok || want[d.Name] == nil {
			continue
		}
		for _, w := range want[d.Name] {
			if !strings.Contains(d.DefaultText, w) {
				t.Errorf("--%s shows default %q, want it to say %q", d.Name, d.DefaultText, w)
			}
		}
		if d.Value != 0 {
			t.Errorf("--%s has value %v: the machines' own defaults must apply", d.Name, d.Value)
		}
		delete(want, d.Name)
	}
	if len(want) > 0 {
		t.Errorf("flags not found: %v", want)
	}
}
