// Package metrics serves a member's --metrics endpoint: Prometheus text at
// /metrics, liveness at /healthz and readiness at /readyz (docs/metrics.md).
//
// Values are read where the services already expose them: the driver's
// frame counters and the machine's status (what a status query answers,
// read on the driver goroutine by driver.Probe), the machine's events, and
// a few numbers a service keeps itself (lockd's waits and holds, ticketd's
// slots). Protocol packages know nothing of it. It writes the text format
// and speaks HTTP itself, so that no tool pays for net/http at start
// (registry, http.go).
package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// ProbeBound is how long the member's loop may take to answer a probe
// before /healthz says it is stuck (503). It is far above the loop's
// normal answer (microseconds) so that a loaded host is not taken for a
// stuck one, and far below what a supervisor waits for (tens of seconds).
const ProbeBound = 2 * time.Second

// Probe reads a member's counters and status on its loop; it fails when
// the loop does not answer before ctx ends. driver.Driver's Probe is one.
type Probe func(ctx context.Context) (driver.StatusReply, error)

// Config says where to listen and whom the metrics describe.
type Config struct {
	Addr   string  // --metrics: host:port; ":PORT" (no host) binds loopback
	Tool   string  // the label tool
	Member node.ID // the label member
	Log    *slog.Logger
}

// Server is a member's metrics endpoint. A nil *Server (no --metrics) is
// valid: every method does nothing, so services call them unconditionally.
type Server struct {
	cfg    Config
	labels string // tool="lockd",member="1"
	set    *registry
	spec   *spec
	ln     net.Listener

	mu    sync.Mutex
	probe Probe
	check []func() error // readiness conditions a service adds

	lastReady atomic.Value // string: "" ready, else the reason
	leaseEnd  atomic.Int64 // elect: the held lease's end, Unix ns; 0 none
}

// Listen opens the endpoint's socket and starts serving on it. The
// scrape shows the member's values once SetProbe has named its loop;
// until then /healthz and /readyz answer 503.
func Listen(cfg Config) (*Server, error) {
	addr, err := ResolveAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if host, _, _ := net.SplitHostPort(addr); !isLoopback(host) {
		cfg.Log.Warn("the metrics endpoint is not on loopback and has no authentication: anyone who can reach it reads this member's state", "addr", ln.Addr().String())
	}
	s := newServer(cfg)
	s.ln = ln
	go s.serve(ln)
	cfg.Log.Info("metrics", "addr", "http://"+ln.Addr().String()+"/metrics")
	return s, nil
}

func newServer(cfg Config) *Server {
	s := &Server{cfg: cfg, set: newRegistry(), spec: specs[cfg.Tool],
		labels: fmt.Sprintf(`tool=%q,member="%d"`, cfg.Tool, cfg.Member)}
	if s.spec == nil {
		s.spec = &spec{}
	}
	s.lastReady.Store("starting")
	// Every series exists from the start, at zero: a scrape always shows
	// the same names, and rate() sees the first increment.
	for _, r := range dropReasons {
		s.set.GetOrCreateCounter(s.name("roundtable_frames_dropped_total", "reason", r))
	}
	for _, n := range commonCounters {
		s.set.GetOrCreateCounter(s.name(n))
	}
	for _, n := range commonGauges {
		s.set.GetOrCreateGauge(s.name(n), nil)
	}
	for _, n := range s.spec.counters {
		s.set.GetOrCreateCounter(s.name(n))
	}
	for _, n := range s.spec.gauges {
		s.set.GetOrCreateGauge(s.name(n), nil)
	}
	for _, n := range s.spec.histograms {
		s.histogram(n)
	}
	if s.spec.lease {
		s.set.GetOrCreateGauge(s.name("roundtable_elect_lease_remaining_seconds"), func() float64 {
			end := s.leaseEnd.Load()
			if end == 0 {
				return 0
			}
			return max(time.Until(time.Unix(0, end)).Seconds(), 0)
		})
	}
	return s
}

// Addr is the address the endpoint listens on.
func (s *Server) Addr() string {
	if s == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops the endpoint.
func (s *Server) Close() {
	if s == nil {
		return
	}
	_ = s.ln.Close()
}

// SetProbe names the loop whose counters and status the scrape shows,
// and whose answers /healthz times.
func (s *Server) SetProbe(p Probe) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.probe = p
	s.mu.Unlock()
}

// Require adds a readiness condition: /readyz answers 503 with the
// error's text while it returns one.
func (s *Server) Require(check func() error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.check = append(s.check, check)
	s.mu.Unlock()
}

// Gauge registers a gauge whose value f gives at each scrape (f is called
// on the HTTP goroutine: it must be safe there).
func (s *Server) Gauge(name string, f func() float64) {
	if s == nil {
		return
	}
	s.set.GetOrCreateGauge(s.name(name), f)
}

// CounterFunc registers a counter read from f at each scrape (a count
// the daemon keeps itself; f must never go down).
func (s *Server) CounterFunc(name string, f func() uint64) {
	if s == nil {
		return
	}
	getOrCreate(s.set, s.name(name), func() *funcCounter { return &funcCounter{f: f} })
}

// Add adds n to a counter.
func (s *Server) Add(name string, n int) {
	if s == nil {
		return
	}
	s.set.GetOrCreateCounter(s.name(name)).Add(n)
}

// name is a series name with the tool and member labels and any others
// (pairs of label name and value).
func (s *Server) name(metric string, kv ...string) string {
	var b strings.Builder
	b.WriteString(metric)
	b.WriteString("{")
	b.WriteString(s.labels)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, ",%s=%q", kv[i], kv[i+1])
	}
	b.WriteString("}")
	return b.String()
}

func (s *Server) setGauge(name string, v float64) {
	s.set.GetOrCreateGauge(s.name(name), nil).Set(v)
}

// Event counts a machine event; the member's event loop calls it for
// every event, before the tool handles it.
func (s *Server) Event(ev node.Event) {
	if s == nil {
		return
	}
	if s.spec.event != nil {
		s.spec.event(s, ev)
	}
}

// read takes one probe and turns it into values; it returns why the
// member is not ready ("" when it is).
func (s *Server) read(ctx context.Context) (string, error) {
	s.mu.Lock()
	probe, checks := s.probe, slices.Clone(s.check)
	s.mu.Unlock()
	if probe == nil {
		return "starting", errors.New("the member has not started")
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeBound)
	defer cancel()
	start := time.Now()
	rep, err := probe(ctx)
	if err != nil {
		s.setGauge("roundtable_ready", 0)
		return "the member's loop does not answer", fmt.Errorf("the member's loop has not answered for %v", ProbeBound)
	}
	s.setGauge("roundtable_loop_probe_seconds", time.Since(start).Seconds())
	s.counters(rep.Counters)
	var st map[string]any
	_ = json.Unmarshal(rep.Status, &st)
	reason := ""
	if s.spec.read != nil {
		reason = s.spec.read(s, st)
	}
	for _, c := range checks {
		if err := c(); err != nil && reason == "" {
			reason = err.Error()
		}
	}
	ready := 0.0
	if reason == "" {
		ready = 1
	}
	s.setGauge("roundtable_ready", ready)
	s.lastReady.Store(reason)
	return reason, nil
}

// counters copies the driver's and the Framer's counters (driver.Stats).
func (s *Server) counters(c map[string]uint64) {
	for k, v := range c {
		switch {
		case k == "sent":
			s.set.GetOrCreateCounter(s.name("roundtable_frames_sent_total")).Set(v)
		case k == "accepted":
			s.set.GetOrCreateCounter(s.name("roundtable_frames_received_total")).Set(v)
		case k == "rejected_by_protocol":
			s.set.GetOrCreateCounter(s.name("roundtable_messages_rejected_total")).Set(v)
		case k == "send_errors":
			s.set.GetOrCreateCounter(s.name("roundtable_send_errors_total")).Set(v)
		case strings.HasPrefix(k, "dropped_"):
			s.set.GetOrCreateCounter(s.name("roundtable_frames_dropped_total", "reason", strings.TrimPrefix(k, "dropped_"))).Set(v)
		}
	}
}

// page answers a GET of path: status code and body.
func (s *Server) page(ctx context.Context, path string) (int, []byte) {
	switch path {
	case "/metrics":
		_, _ = s.read(ctx)
		var b strings.Builder
		s.set.WritePrometheus(&b)
		return 200, []byte(b.String())
	case "/healthz":
		s.mu.Lock()
		probe := s.probe
		s.mu.Unlock()
		if probe == nil {
			return 503, []byte("starting\n")
		}
		ctx, cancel := context.WithTimeout(ctx, ProbeBound)
		defer cancel()
		if _, err := probe(ctx); err != nil {
			return 503, []byte(fmt.Sprintf("stuck: the member's loop has not answered for %v\n", ProbeBound))
		}
		return 200, []byte("ok\n")
	case "/readyz":
		reason, err := s.read(ctx)
		switch {
		case err != nil:
			return 503, []byte(err.Error() + "\n")
		case reason != "":
			return 503, []byte(reason + "\n")
		}
		return 200, []byte("ok\n")
	}
	return 404, []byte("not found: try /metrics, /healthz or /readyz\n")
}

// ResolveAddr checks a --metrics address: host:port, or :PORT for
// loopback.
func ResolveAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--metrics %q: want host:port or :port", addr)
	}
	if port == "" {
		return "", fmt.Errorf("--metrics %q: no port", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
