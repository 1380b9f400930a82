package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/driver"
)

func get(t *testing.T, s *Server, path string) (int, string) {
	t.Helper()
	code, body := s.page(context.Background(), path)
	return code, string(body)
}

func statusProbe(st map[string]any, counters map[string]uint64) Probe {
	return func(ctx context.Context) (driver.StatusReply, error) {
		b, _ := json.Marshal(st)
		return driver.StatusReply{Status: b, Counters: counters}, nil
	}
}

func TestNotStartedIsNotHealthy(t *testing.T) {
	s := newServer(Config{Tool: "elect", Member: 1})
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, _ := get(t, s, p); code != 503 {
			t.Errorf("%s before the member started: %d, want 503", p, code)
		}
	}
}

// A loop that never takes up the probe is stuck: /healthz says so within
// the bound, and the scrape still answers.
func TestStuckLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for ProbeBound")
	}
	s := newServer(Config{Tool: "lockd", Member: 2})
	s.SetProbe(func(ctx context.Context) (driver.StatusReply, error) {
		<-ctx.Done()
		return driver.StatusReply{}, ctx.Err()
	})
	start := time.Now()
	code, body := get(t, s, "/healthz")
	if code != 503 || !strings.Contains(body, "stuck") {
		t.Errorf("/healthz of a stuck loop: %d %q", code, body)
	}
	if took := time.Since(start); took < ProbeBound || took > ProbeBound+10*time.Second {
		t.Errorf("/healthz took %v, want about %v", took, ProbeBound)
	}
	if code, body := get(t, s, "/metrics"); code != 200 || !strings.Contains(body, `roundtable_ready{tool="lockd",member="2"} 0`) {
		t.Errorf("/metrics of a stuck loop: %d\n%s", code, body)
	}
}

func TestReadiness(t *testing.T) {
	for _, c := range []struct {
		tool   string
		st     map[string]any
		reason string // "" ready
	}{
		{"elect", map[string]any{"leader": 0, "state": "candidate"}, "no leader known"},
		{"elect", map[string]any{"leader": 1, "state": "leader", "lease": false}, "no majority"},
		{"elect", map[string]any{"leader": 1, "state": "leader", "lease": true}, ""},
		{"elect", map[string]any{"leader": 3, "state": "follower", "lease": false}, ""},
		{"lockd", map[string]any{"id": 1, "algo": "central", "quorum": false}, "no quorum"},
		{"lockd", map[string]any{"id": 1, "algo": "central", "quorum": true}, ""},
		{"lockd", map[string]any{"id": 1, "algo": "ricart-agrawala", "down": []int{2}}, "members down"},
		{"lockd", map[string]any{"id": 1, "algo": "token-ring", "down": []int{2}}, ""},
		{"mcast", map[string]any{"in_view": false}, "not in a view"},
		{"mcast", map[string]any{"in_view": true, "minority": true}, "minority"},
		{"mcast", map[string]any{"sent": 3}, ""},
		{"clocksync", map[string]any{"synced": false}, "not synchronised"},
		{"clocksync", map[string]any{"master": 1}, ""},
		{"ticketd", map[string]any{"state": "excluded"}, "excluded"},
	} {
		s := newServer(Config{Tool: c.tool, Member: 1})
		s.SetProbe(statusProbe(c.st, nil))
		code, body := get(t, s, "/readyz")
		if c.reason == "" && code != 200 || c.reason != "" && (code != 503 || !strings.Contains(body, c.reason)) {
			t.Errorf("%s %v: /readyz %d %q, want reason %q", c.tool, c.st, code, body, c.reason)
		}
	}
}

func TestRequire(t *testing.T) {
	s := newServer(Config{Tool: "ticketd", Member: 1})
	s.SetProbe(statusProbe(map[string]any{"state": "idle"}, nil))
	var found bool
	s.Require(func() error {
		if !found {
			return errors.New("has not found the ticket pool")
		}
		return nil
	})
	if code, body := get(t, s, "/readyz"); code != 503 || !strings.Contains(body, "ticket pool") {
		t.Errorf("/readyz: %d %q", code, body)
	}
	found = true
	if code, body := get(t, s, "/readyz"); code != 200 {
		t.Errorf("/readyz: %d %q", code, body)
	}
}

func TestScrape(t *testing.T) {
	s := newServer(Config{Tool: "lockd", Member: 3})
	s.SetProbe(statusProbe(map[string]any{"id": 3, "algo": "central", "quorum": true,
		"locks": []map[string]any{{"name": "a", "holder": 3}, {"name": "b", "holder": 1, "queue": []string{"3/7", "2/1"}}}},
		map[string]uint64{"sent": 5, "accepted": 4, "dropped_auth": 2, "dropped_replay": 1}))
	iv := s.Interval("roundtable_lockd_hold_seconds")
	iv.Begin("1/a")
	iv.End("1/a")
	iv.End("never begun")
	_, body := get(t, s, "/metrics")
	for _, want := range []string{
		`roundtable_frames_sent_total{tool="lockd",member="3"} 5`,
		`roundtable_frames_received_total{tool="lockd",member="3"} 4`,
		`roundtable_frames_dropped_total{tool="lockd",member="3",reason="auth"} 2`,
		`roundtable_frames_dropped_total{tool="lockd",member="3",reason="replay"} 1`,
		`roundtable_frames_dropped_total{tool="lockd",member="3",reason="misdirected"} 0`,
		`roundtable_lockd_locks_held{tool="lockd",member="3"} 1`,
		`roundtable_lockd_waiters{tool="lockd",member="3"} 1`,
		`roundtable_lockd_hold_seconds_bucket{tool="lockd",member="3",le="+Inf"} 1`,
		`roundtable_lockd_hold_seconds_count{tool="lockd",member="3"} 1`,
		`roundtable_lockd_acquire_wait_seconds_count{tool="lockd",member="3"} 0`,
		`roundtable_ready{tool="lockd",member="3"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %s\n%s", want, body)
		}
	}
	// The one interval lands in the first bucket whose bound is at least
	// its length, and in none below it; how long it lasted is the host's
	// business (a busy one stretches it), so the bucket is read off its sum.
	var sum float64
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, `roundtable_lockd_hold_seconds_sum{tool="lockd",member="3"} `); ok {
			sum, _ = strconv.ParseFloat(v, 64)
		}
	}
	for i, b := range bounds {
		if b < sum {
			continue
		}
		le := func(b float64) string {
			return `roundtable_lockd_hold_seconds_bucket{tool="lockd",member="3",le="` + strconv.FormatFloat(b, 'g', -1, 64) + `"} `
		}
		if !strings.Contains(body, le(b)+"1\n") || (i > 0 && !strings.Contains(body, le(bounds[i-1])+"0\n")) {
			t.Errorf("an interval of %gs is not in the bucket le=%g alone\n%s", sum, b, body)
		}
		break
	}
}

func TestHistogramBuckets(t *testing.T) {
	s := newServer(Config{Tool: "lockd", Member: 1})
	h := s.histogram("roundtable_lockd_acquire_wait_seconds")
	h.observe(30 * time.Millisecond) // above .025, within .05
	h.observe(time.Hour)             // only +Inf
	for i, b := range bounds {
		want := uint64(0)
		if b >= .05 && b < 3600 {
			want = 1
		}
		if got := h.buckets[i].Get(); got != want {
			t.Errorf("le=%g: %d, want %d", b, got, want)
		}
	}
	if got := h.buckets[len(bounds)].Get(); got != 2 {
		t.Errorf("+Inf: %d, want 2", got)
	}
}

// Services call a nil *Server (no --metrics) unconditionally.
func TestNilServer(t *testing.T) {
	var s *Server
	s.SetProbe(nil)
	s.Require(nil)
	s.Gauge("x", nil)
	s.Add("x", 1)
	s.Event(nil)
	s.Close()
	iv := s.Interval("x")
	iv.Begin("k")
	iv.End("k")
	iv.Drop("k")
	if s.Addr() != "" {
		t.Error("nil server has an address")
	}
}

func TestResolveAddr(t *testing.T) {
	for in, want := range map[string]string{":9100": "127.0.0.1:9100", "0.0.0.0:9100": "0.0.0.0:9100", "[::1]:80": "[::1]:80"} {
		if got, err := ResolveAddr(in); err != nil || got != want {
			t.Errorf("ResolveAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"9100", "host", "127.0.0.1:", ""} {
		if _, err := ResolveAddr(bad); err == nil {
			t.Errorf("ResolveAddr(%q): no error", bad)
		}
	}
}

func TestListenWarnsOffLoopback(t *testing.T) {
	var buf strings.Builder
	log := newTextLogger(&buf)
	s, err := Listen(Config{Addr: "0.0.0.0:0", Tool: "elect", Member: 1, Log: log})
	if err != nil {
		t.Skipf("cannot listen on 0.0.0.0: %v", err)
	}
	defer s.Close()
	if !strings.Contains(buf.String(), "no authentication") {
		t.Errorf("no warning for a non-loopback endpoint:\n%s", buf.String())
	}
	buf.Reset()
	s2, err := Listen(Config{Addr: ":0", Tool: "elect", Member: 1, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if strings.Contains(buf.String(), "no authentication") || !strings.HasPrefix(s2.Addr(), "127.0.0.1:") {
		t.Errorf(":0 should bind loopback quietly: %s\n%s", s2.Addr(), buf.String())
	}
	resp, err := http.Get("http://" + s2.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /metrics: %d", resp.StatusCode)
	}
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// The endpoint's HTTP: what scrapers and curl send, and what they must
// not be able to do.
func TestHTTPExchange(t *testing.T) {
	s, err := Listen(Config{Addr: ":0", Tool: "elect", Member: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetProbe(statusProbe(map[string]any{"leader": 1, "state": "leader"}, nil))
	raw := func(req string) string {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(c)
		return string(b)
	}
	for req, want := range map[string]string{
		"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n":             "HTTP/1.1 200 OK\r\n",
		"GET /healthz?verbose=1 HTTP/1.0\r\n\r\n":             "HTTP/1.1 200 OK\r\n",
		"GET /nothing HTTP/1.1\r\n\r\n":                       "HTTP/1.1 404 ",
		"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n": "HTTP/1.1 405 ",
		"hello\r\n\r\n": "HTTP/1.1 400 ",
		"GET /metrics HTTP/1.1\r\n" + strings.Repeat("X-A: b\r\n", 200) + "\r\n": "HTTP/1.1 400 ",
		"GET /" + strings.Repeat("a", 10000) + " HTTP/1.1\r\n\r\n":               "HTTP/1.1 400 ",
	} {
		if got := raw(req); !strings.HasPrefix(got, want) {
			t.Errorf("%.40q: answered %.60q, want %q", req, got, want)
		}
	}
	head := raw("HEAD /metrics HTTP/1.1\r\n\r\n")
	if !strings.HasPrefix(head, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(head, "\r\n\r\n") {
		t.Errorf("HEAD: %q", head)
	}
	// And a real client.
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" ||
		!strings.Contains(string(b), `roundtable_elect_leader{tool="elect",member="1"} 1`+"\n") {
		t.Errorf("GET /metrics: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}

func TestFormatFloat(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 1.5: "1.5", 3: "3", 1e-7: "1e-07", math.Inf(1): "+Inf", math.Inf(-1): "-Inf"} {
		if got := formatFloat(v); got != want {
			t.Errorf("formatFloat(%v) = %q, want %q", v, got, want)
		}
	}
	if formatFloat(math.NaN()) != "NaN" {
		t.Error("NaN")
	}
}
