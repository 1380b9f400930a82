//go:build plot

package ticketsim

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// CanPlot: this build draws plots (built with -tags plot).
const CanPlot = true

// Plot draws availability against p_f (log scale), one line per α
// through the seeds' median with a bar from their minimum to their
// maximum, the seed's bound ½(1−α) as a dashed vertical line in the same
// colour, and its Chernoff bound 1 − (e/4)^{2·p_f·n} on the chance that a
// round has at most 2·p_f·n failures (§4.2, "Availability") as a dotted
// black line. The file's extension chooses the format (.svg, .png, .pdf).
func Plot(points []SweepPoint, title, file string) error {
	if err := PlotFormat(file); err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "p_f: probability that a holder crashes in a round"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Label.Text = "acquisitions that got a ticket in time"
	p.Y.Min, p.Y.Max = 0, 1.05
	p.Legend.Top = false
	p.Legend.Left = true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), vg.Points(6)
	var alphas []float64
	byAlpha := map[float64]spreadXYs{}
	var chernoff plotter.XYs
	for _, pt := range points {
		if _, ok := byAlpha[pt.Alpha]; !ok {
			alphas = append(alphas, pt.Alpha)
		}
		byAlpha[pt.Alpha] = append(byAlpha[pt.Alpha], pt)
		if len(alphas) == 1 {
			chernoff = append(chernoff, plotter.XY{X: pt.PF, Y: 1 - pt.Chernoff})
		}
	}
	for i, a := range alphas {
		col := plotutil.Color(i)
		l, s, err := plotter.NewLinePoints(byAlpha[a])
		if err != nil {
			return err
		}
		l.Color, s.Color = col, col
		s.Shape = plotutil.Shape(i)
		bars, err := plotter.NewYErrorBars(byAlpha[a])
		if err != nil {
			return err
		}
		bars.Color = col
		p.Add(l, s, bars)
		p.Legend.Add(fmt.Sprintf("α = %.1f (median, min to max)", a), l, s)
		b := (1 - a) / 2
		bl, err := plotter.NewLine(plotter.XYs{{X: b, Y: 0}, {X: b, Y: 1.05}})
		if err != nil {
			return err
		}
		bl.Color = faded(col)
		bl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(bl)
		p.Legend.Add(fmt.Sprintf("bound ½(1−α) = %.2f", b), bl)
	}
	if len(chernoff) > 0 {
		cl, err := plotter.NewLine(chernoff)
		if err != nil {
			return err
		}
		cl.Color = color.Black
		cl.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(cl)
		p.Legend.Add("1 − (e/4)^(2·p_f·n)", cl)
	}
	p.Add(plotter.NewGrid())
	return p.Save(7*vg.Inch, 4.5*vg.Inch, file)
}

// spreadXYs: one α's points, at their median, with the seeds' spread.
type spreadXYs []SweepPoint

func (s spreadXYs) Len() int                    { return len(s) }
func (s spreadXYs) XY(i int) (float64, float64) { return s[i].PF, s[i].Median }
func (s spreadXYs) YError(i int) (float64, float64) {
	return s[i].Median - s[i].Min, s[i].Max - s[i].Median
}

func faded(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 160}
}
