package main

import (
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestVotingRiskCommand: lockd voting-risk prints Tanenbaum's example
// (n = 32, m = 24: below 10⁻⁴⁰), JSON with --json, and refuses bad input
// with exit 64 and one line on stderr.
func TestVotingRiskCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--n", "32", "--m", "24", "--p", "0.001"}, "n 32 m 24 p 0.001 p_v 7.300e-43\n"},
		{[]string{"--n", "32", "--m", "24", "--p", "1/1080"}, "n 32 m 24 p 1/1080 p_v 2.132e-43\n"},
		{[]string{"--n", "3", "--p", "0.1"}, "n 3 m 2 p 0.1 p_v 1.900e-01\n"},
	} {
		code, stdout, stderr := runLockd(append([]string{"voting-risk"}, c.args...)...)
		if code != 0 || stdout != c.want {
			t.Errorf("voting-risk %v: exit %d, %q (%s), want %q", c.args, code, stdout, stderr, c.want)
		}
	}
	code, stdout, _ := runLockd("voting-risk", "--json", "--n", "32", "--m", "24", "--p", "0.001")
	if code != 0 || !strings.Contains(stdout, `"p_v":"7.300e-43"`) {
		t.Errorf("voting-risk --json: exit %d, %q", code, stdout)
	}
	clitest.CheckJSON(t, "lockd", []byte(stdout))
	for _, args := range [][]string{
		{"--n", "32", "--m", "16", "--p", "0.001"},
		{"--n", "32", "--m", "33", "--p", "0.001"},
		{"--n", "32", "--m", "24"},
		{"--n", "32", "--m", "24", "--p", "often"},
		{"--n", "3", "--p", "1.5"},
		{"--n", "0", "--p", "0.1"},
		{"--n", "3", "--p", "0.1", "extra"},
	} {
		code, stdout, stderr := runLockd(append([]string{"voting-risk"}, args...)...)
		if code != 64 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "lockd: ") {
			t.Errorf("voting-risk %v: exit %d, stdout %q, stderr %q; want exit 64 and one line on stderr", args, code, stdout, stderr)
		}
	}
}
