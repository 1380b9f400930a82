package metrics

import (
	"strconv"
	"sync"
	"time"
)

// bounds are the histograms' bucket bounds in seconds: a lock waited for
// or held from a millisecond to five minutes.
var bounds = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// histogram is a Prometheus histogram (cumulative le buckets, _sum,
// _count), so that histogram_quantile works on it.
type histogram struct {
	buckets []*counter // one per bound, then +Inf
	sum     *floatCounter
	count   *counter
}

func (s *Server) histogram(name string) *histogram {
	s.set.declareHistogram(name)
	h := &histogram{sum: s.set.GetOrCreateFloatCounter(s.name(name + "_sum")),
		count: s.set.GetOrCreateCounter(s.name(name + "_count"))}
	for _, b := range bounds {
		h.buckets = append(h.buckets, s.set.GetOrCreateCounter(s.name(name+"_bucket", "le", strconv.FormatFloat(b, 'g', -1, 64))))
	}
	h.buckets = append(h.buckets, s.set.GetOrCreateCounter(s.name(name+"_bucket", "le", "+Inf")))
	return h
}

func (h *histogram) observe(d time.Duration) {
	v := d.Seconds()
	for i, b := range bounds {
		if v <= b {
			h.buckets[i].Inc()
		}
	}
	h.buckets[len(bounds)].Inc()
	h.sum.Add(v)
	h.count.Inc()
}

// maxOpen bounds the intervals an Interval keeps open (a client that
// never ends its wait must not grow the map for ever).
const maxOpen = 4096

// Interval measures the time from Begin to End of each key into a
// histogram. A nil *Interval does nothing.
type Interval struct {
	h    *histogram
	mu   sync.Mutex
	open map[string]time.Time
}

// Interval returns the Interval feeding the histogram name.
func (s *Server) Interval(name string) *Interval {
	if s == nil {
		return nil
	}
	return &Interval{h: s.histogram(name), open: map[string]time.Time{}}
}

// Begin starts key's interval now (again, if it was open).
func (iv *Interval) Begin(key string) {
	if iv == nil {
		return
	}
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if len(iv.open) < maxOpen {
		iv.open[key] = time.Now()
	}
}

// End ends key's interval and observes its length, if it was open.
func (iv *Interval) End(key string) {
	if iv == nil {
		return
	}
	iv.mu.Lock()
	start, ok := iv.open[key]
	delete(iv.open, key)
	iv.mu.Unlock()
	if ok {
		iv.h.observe(time.Since(start))
	}
}

// Drop forgets key's interval without observing it.
func (iv *Interval) Drop(key string) {
	if iv == nil {
		return
	}
	iv.mu.Lock()
	delete(iv.open, key)
	iv.mu.Unlock()
}
