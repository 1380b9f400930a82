package metrics

import (
	"bufio"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// registry holds a member's series by their full name (with labels) and
// writes them in the Prometheus text format (version 0.0.4), sorted by
// name.
//
// It is this package's own rather than a library's: the text format is
// a line per series, and every metrics library measured pulled in, with
// net/http for its push client and runtime/metrics for Go runtime series,
// 0.4 to 0.9 ms of package initialisation that every start of every tool
// (every `lockd run`) would pay (docs/metrics.md, "Cost").
type registry struct {
	mu     sync.Mutex
	series map[string]series
}

type series interface{ value() string }

func newRegistry() *registry { return &registry{series: map[string]series{}} }

func getOrCreate[T series](r *registry, name string, make func() T) T {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.series[name].(T); ok {
		return s
	}
	s := make()
	r.series[name] = s
	return s
}

// GetOrCreateCounter returns the counter called name.
func (r *registry) GetOrCreateCounter(name string) *counter {
	return getOrCreate(r, name, func() *counter { return &counter{} })
}

// GetOrCreateFloatCounter returns the float counter called name.
func (r *registry) GetOrCreateFloatCounter(name string) *floatCounter {
	return getOrCreate(r, name, func() *floatCounter { return &floatCounter{} })
}

// GetOrCreateGauge returns the gauge called name: read from f at each
// scrape if f is not nil, else whatever Set stored. An existing gauge
// keeps its f.
func (r *registry) GetOrCreateGauge(name string, f func() float64) *gauge {
	return getOrCreate(r, name, func() *gauge { return &gauge{f: f} })
}

// WritePrometheus writes every series, one line each, sorted by name.
func (r *registry) WritePrometheus(w io.Writer) {
	r.mu.Lock()
	names := make([]string, 0, len(r.series))
	for n := range r.series {
		names = append(names, n)
	}
	all := make(map[string]series, len(r.series))
	for n, s := range r.series {
		all[n] = s
	}
	r.mu.Unlock()
	slices.Sort(names)
	bw := bufio.NewWriter(w)
	for _, n := range names {
		bw.WriteString(n)
		bw.WriteByte(' ')
		bw.WriteString(all[n].value())
		bw.WriteByte('\n')
	}
	_ = bw.Flush()
}

type counter struct{ n atomic.Uint64 }

func (c *counter) Inc()          { c.n.Add(1) }
func (c *counter) Add(n int)     { c.n.Add(uint64(n)) }
func (c *counter) Set(n uint64)  { c.n.Store(n) }
func (c *counter) Get() uint64   { return c.n.Load() }
func (c *counter) value() string { return strconv.FormatUint(c.n.Load(), 10) }

type floatCounter struct {
	mu sync.Mutex
	v  float64
}

func (c *floatCounter) Add(v float64) {
	c.mu.Lock()
	c.v += v
	c.mu.Unlock()
}

func (c *floatCounter) value() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return formatFloat(c.v)
}

type gauge struct {
	f    func() float64
	bits atomic.Uint64
}

func (g *gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

func (g *gauge) value() string {
	if g.f != nil {
		return formatFloat(g.f())
	}
	return formatFloat(math.Float64frombits(g.bits.Load()))
}

// formatFloat writes v as the text format wants it (NaN, +Inf, -Inf
// spelt so).
func formatFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
