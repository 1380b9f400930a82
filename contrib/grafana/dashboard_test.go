// Package grafana holds the test of the Grafana dashboard beside it.
package grafana

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// documented reads docs/metrics.md's tables: metric name → type.
func documented(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(roundtable_[a-z0-9_]+)` \\| ([a-z]+) \\|").FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	if len(out) < 20 {
		t.Fatalf("only %d metrics found in docs/metrics.md", len(out))
	}
	return out
}

// exprs returns every query ("expr") in a dashboard, however deep.
func exprs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "expr" {
				out = append(out, s)
			} else {
				out = append(out, exprs(x)...)
			}
		}
	case []any:
		for _, x := range v {
			out = append(out, exprs(x)...)
		}
	}
	return out
}

var metricName = regexp.MustCompile(`\broundtable_[a-z0-9_]+`)

// undocumented returns the metric names the queries use that docs/metrics.md
// does not list (a histogram's _bucket, _sum and _count series stand for
// the histogram).
func undocumented(docs map[string]string, queries []string) []string {
	var out []string
	for _, q := range queries {
		for _, name := range metricName.FindAllString(q, -1) {
			base := name
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b := strings.TrimSuffix(name, suf); b != name && docs[b] == "histogram" {
					base = b
				}
			}
			if _, ok := docs[base]; !ok && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// TestDashboardMetricsDocumented: every metric roundtable.json queries is
// one docs/metrics.md lists, so a renamed metric cannot leave an empty
// panel behind; and the check itself catches a made-up name.
func TestDashboardMetricsDocumented(t *testing.T) {
	docs := documented(t)
	b, err := os.ReadFile("roundtable.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("roundtable.json: %v", err)
	}
	qs := exprs(dash)
	if len(qs) < 20 {
		t.Fatalf("only %d queries in roundtable.json", len(qs))
	}
	if bad := undocumented(docs, qs); len(bad) > 0 {
		t.Errorf("roundtable.json queries metrics docs/metrics.md does not list: %v", bad)
	}
	// Every tool's section has a panel, and lockd's tokens are shown.
	all := strings.Join(qs, "\n")
	for _, want := range []string{"roundtable_elect_", "roundtable_lockd_token", "roundtable_lockd_grants_total",
		"roundtable_lockd_waiters", "roundtable_ticketd_", "roundtable_mcast_", "roundtable_clocksync_", "roundtable_frames_dropped_total"} {
		if !strings.Contains(all, want) {
			t.Errorf("roundtable.json has no query of %s*", want)
		}
	}
	// A planted bug: a misspelt metric and a histogram suffix on a gauge.
	planted := []string{`rate(roundtable_lockd_grant_total[5m])`, `roundtable_lockd_waiters_bucket`,
		`histogram_quantile(0.5, rate(roundtable_lockd_hold_seconds_bucket[5m]))`}
	if got := undocumented(docs, planted); !slices.Equal(got, []string{"roundtable_lockd_grant_total", "roundtable_lockd_waiters_bucket"}) {
		t.Errorf("the check found %v in the planted queries, want the misspelt name and the gauge's _bucket", got)
	}
}
