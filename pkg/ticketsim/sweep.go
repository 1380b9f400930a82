package ticketsim

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// SweepAlphas and SweepPFs are the grid `ticketd sim --plot` runs: the
// seed's three examples of α, and failure probabilities per process and
// round from far below to beyond its bound ½(1−α).
var (
	SweepAlphas = []float64{0.5, 0.8, 0.9}
	SweepPFs    = []float64{0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3}
	// SweepPFsPaper is the grid under the seed's own model (SimConfig.Paper),
	// where p_f counts per round of its analysis: both sides of every
	// bound (0.25, 0.10 and 0.05).
	SweepPFsPaper = []float64{0.01, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5}
)

// SweepPoint is one (α, p_f) of a sweep, averaged over its seeds.
type SweepPoint struct {
	Event        string  `json:"event"` // "sim-point"
	Alpha        float64 `json:"alpha"`
	PF           float64 `json:"pf"`
	Bound        float64 `json:"bound"`
	Seeds        int     `json:"seeds"`
	Availability float64 `json:"availability"`
	FreeRounds   float64 `json:"free_rounds"`
	Crashes      int     `json:"crashes"`
	Excluded     int     `json:"excluded"`
	HeldBack     int     `json:"held_back,omitempty"`
	Attempts     int     `json:"attempts"`
	Acquired     int     `json:"acquired"`
	// Min, Median and Max are the spread of the seeds' own availability,
	// over the Judged seeds that had an acquisition to judge.
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
	Judged int     `json:"judged_seeds"`
	// Chernoff is the seed's bound (e/4)^{2·p_f·n} on the chance that more
	// than 2·p_f·n processes fail in a round (§4.2, "Availability").
	Chernoff float64 `json:"chernoff"`
}

// Chernoff is (e/4)^{2·pf·n}.
func Chernoff(pf float64, n int) float64 { return math.Pow(math.E/4, 2*pf*float64(n)) }

// Line is the point as one line of text.
func (p SweepPoint) Line() string {
	side := "below"
	if p.PF >= p.Bound {
		side = "above"
	}
	line := fmt.Sprintf("alpha %.1f pf %g (%s the bound %.2f) availability %.3f (%d of %d; seeds min %.3f median %.3f max %.3f of %d) free %.3f crashes %d excluded %d",
		p.Alpha, p.PF, side, p.Bound, p.Availability, p.Acquired, p.Attempts, p.Min, p.Median, p.Max, p.Judged, p.FreeRounds, p.Crashes, p.Excluded)
	if p.HeldBack > 0 {
		line += fmt.Sprintf(" held back %d", p.HeldBack)
	}
	return line
}

// Workers is how many runs of a sweep go side by side.
var Workers = min(2, runtime.GOMAXPROCS(0))

// Sweep runs base for every α and p_f with seeds base.Seed, base.Seed+1,
// …; availability is acquisitions in time over acquisitions judged, all
// seeds pooled. each sees every point as it is done.
func Sweep(base SimConfig, alphas, pfs []float64, seeds int, each func(SweepPoint)) ([]SweepPoint, error) {
	var out []SweepPoint
	for _, a := range alphas {
		for _, pf := range pfs {
			pt := SweepPoint{Event: "sim-point", Alpha: a, PF: pf, Bound: (1 - a) / 2, Seeds: seeds, Chernoff: Chernoff(pf, base.Tickets)}
			var free float64
			var per []float64
			// The seeds run side by side, at most Workers at once; each
			// run is deterministic, so the point does not depend on it.
			rs := make([]SimResult, seeds)
			errs := make([]error, seeds)
			sem := make(chan struct{}, max(1, Workers))
			var wg sync.WaitGroup
			for i := range seeds {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					c := base
					c.Alpha, c.PF, c.Seed = a, pf, base.Seed+uint64(i)
					rs[i], errs[i] = Simulate(c)
				}()
			}
			wg.Wait()
			for i := range seeds {
				r, err := rs[i], errs[i]
				if err != nil {
					return out, err
				}
				pt.Attempts += r.Attempts
				pt.Acquired += r.Acquired
				pt.Crashes += r.Crashes
				pt.Excluded += r.Excluded
				pt.HeldBack += r.HeldBack
				free += r.FreeRounds
				if r.Attempts > 0 {
					per = append(per, r.Availability)
				}
			}
			pt.Min, pt.Median, pt.Max, pt.Judged = spread(per)
			pt.Availability = 1
			if pt.Attempts > 0 {
				pt.Availability = float64(pt.Acquired) / float64(pt.Attempts)
			}
			pt.FreeRounds = free / float64(seeds)
			out = append(out, pt)
			if each != nil {
				each(pt)
			}
		}
	}
	return out, nil
}

// spread is the minimum, median and maximum of xs, and how many.
func spread(xs []float64) (lo, med, hi float64, n int) {
	if len(xs) == 0 {
		return 1, 1, 1, 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n = len(xs)
	med = xs[n/2]
	if n%2 == 0 {
		med = (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[0], med, xs[n-1], n
}

// ErrNoPlot is Plot's answer in a build without plots (CanPlot).
var ErrNoPlot = errors.New("this ticketd was built without plots: build it with 'go build -tags plot ./cmd/ticketd' for --plot")

// PlotFormat checks that Plot can write file's format.
func PlotFormat(file string) error {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".svg", ".png", ".pdf":
		return nil
	}
	return fmt.Errorf("--plot %s: want a .svg, .png or .pdf file", file)
}
