package metrics

import (
	"bufio"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
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
	mu         sync.Mutex
	series     map[string]series
	histograms map[string]bool // families written as histograms
}

type series interface{ value() string }

func newRegistry() *registry {
	return &registry{series: map[string]series{}, histograms: map[string]bool{}}
}

// declareHistogram makes family's _bucket, _sum and _count series one
// histogram under a single # TYPE line.
func (r *registry) declareHistogram(family string) {
	r.mu.Lock()
	r.histograms[family] = true
	r.mu.Unlock()
}

// family is the metric family a series belongs to and its type, for the
// # TYPE line: a histogram's parts go under the histogram's name; other
// series are typed by their kind.
func (r *registry) family(name string, s series) (string, string) {
	base := name
	if i := strings.IndexByte(base, '{'); i >= 0 {
		base = base[:i]
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if f := strings.TrimSuffix(base, suf); f != base && r.histograms[f] {
			return f, "histogram"
		}
	}
	switch s.(type) {
	case *counter, *floatCounter, *funcCounter:
		return base, "counter"
	}
	return base, "gauge"
}

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

// WritePrometheus writes every series, one line each, grouped by family
// under its # TYPE line and sorted by name.
func (r *registry) WritePrometheus(w io.Writer) {
	type entry struct{ name, family, typ string }
	r.mu.Lock()
	names := make([]entry, 0, len(r.series))
	all := make(map[string]series, len(r.series))
	for n, s := range r.series {
		all[n] = s
		f, t := r.family(n, s)
		names = append(names, entry{n, f, t})
	}
	r.mu.Unlock()
	slices.SortFunc(names, func(a, b entry) int {
		if c := strings.Compare(a.family, b.family); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	bw := bufio.NewWriter(w)
	last := ""
	for _, e := range names {
		if e.family != last {
			bw.WriteString("# TYPE " + e.family + " " + e.typ + "\n")
			last = e.family
		}
		n := e.name
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

// funcCounter is a counter kept elsewhere, read at each scrape.
type funcCounter struct{ f func() uint64 }

func (c *funcCounter) value() string { return strconv.FormatUint(c.f(), 10) }

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
