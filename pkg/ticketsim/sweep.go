package ticketsim

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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
}

// Line is the point as one line of text.
func (p SweepPoint) Line() string {
	side := "below"
	if p.PF >= p.Bound {
		side = "above"
	}
	line := fmt.Sprintf("alpha %.1f pf %g (%s the bound %.2f) availability %.3f (%d of %d) free %.3f crashes %d excluded %d",
		p.Alpha, p.PF, side, p.Bound, p.Availability, p.Acquired, p.Attempts, p.FreeRounds, p.Crashes, p.Excluded)
	if p.HeldBack > 0 {
		line += fmt.Sprintf(" held back %d", p.HeldBack)
	}
	return line
}

// Sweep runs base for every α and p_f with seeds base.Seed, base.Seed+1,
// …; availability is acquisitions in time over acquisitions judged, all
// seeds pooled. each sees every point as it is done.
func Sweep(base SimConfig, alphas, pfs []float64, seeds int, each func(SweepPoint)) ([]SweepPoint, error) {
	var out []SweepPoint
	for _, a := range alphas {
		for _, pf := range pfs {
			pt := SweepPoint{Event: "sim-point", Alpha: a, PF: pf, Bound: (1 - a) / 2, Seeds: seeds}
			var free float64
			for i := range seeds {
				c := base
				c.Alpha, c.PF, c.Seed = a, pf, base.Seed+uint64(i)
				r, err := Simulate(c)
				if err != nil {
					return out, err
				}
				pt.Attempts += r.Attempts
				pt.Acquired += r.Acquired
				pt.Crashes += r.Crashes
				pt.Excluded += r.Excluded
				pt.HeldBack += r.HeldBack
				free += r.FreeRounds
			}
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
