package ticketd

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// TestLendRefusalBookkeeping: a slot's refusal is the same one while
// only its figures change (so it is warned of once, and "for how long"
// counts from its start); it is warned of once a client has waited a
// second and the refusal has lasted one; it goes stale a second after
// the last refusal, or when the slot's state changes, and a lend clears it.
func TestLendRefusalBookkeeping(t *testing.T) {
	var logs bytes.Buffer
	d := &daemon{mb: &cli.Member{Common: &cli.Common{Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}}}
	s := &slot{mc: machine{state: "coordinator", ticket: 2}}
	d.slots = []*slot{s}
	t0 := time.Unix(1000, 0)
	d.refusedLend(s, "no lease from a majority of the members (leases granted by 1 of 3, 2 needed)", t0)
	d.refusedLend(s, "no lease from a majority of the members (leases granted by 0 of 3, 2 needed)", t0.Add(500*time.Millisecond))
	if s.refusedAt != t0 || !strings.Contains(s.refusing(t0.Add(time.Second)), "0 of 3") {
		t.Fatalf("the same refusal with other figures: since %v, now %q", s.refusedAt, s.refusing(t0.Add(time.Second)))
	}
	if n := strings.Count(logs.String(), "lend refused"); n != 1 {
		t.Fatalf("%d debug lines for one refusal going on, want 1:\n%s", n, &logs)
	}
	d.queue = []*session{{since: t0}}
	d.tellRefusals(t0.Add(900 * time.Millisecond))
	if strings.Contains(logs.String(), "WARN") {
		t.Fatalf("warned before the client waited a second:\n%s", &logs)
	}
	d.refusedLend(s, "no lease from a majority of the members (leases granted by 1 of 3, 2 needed)", t0.Add(1200*time.Millisecond))
	d.tellRefusals(t0.Add(1200 * time.Millisecond))
	d.tellRefusals(t0.Add(1300 * time.Millisecond))
	if n := strings.Count(logs.String(), "WARN"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, &logs)
	}
	if why := s.refusing(t0.Add(2300 * time.Millisecond)); why != "" {
		t.Fatalf("a refusal a second old still reported: %q", why)
	}
	s.mc.state = "leaving"
	if why := s.refusing(t0.Add(1300 * time.Millisecond)); why != "" {
		t.Fatalf("a refusal from another state still reported: %q", why)
	}
	d.refusedLend(s, "may not act: it is leaving", t0.Add(1400*time.Millisecond))
	if s.refusedAt != t0.Add(1400*time.Millisecond) || s.told {
		t.Fatalf("a new reason: since %v, told %v", s.refusedAt, s.told)
	}
}
