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

// Plot draws availability against p_f (log scale), one line per α, with
// the seed's bound ½(1−α) as a dashed vertical line in the same colour.
// The file's extension chooses the format (.svg, .png, .pdf).
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
	p.Legend.Top = true
	p.Legend.Left = false
	var alphas []float64
	byAlpha := map[float64]plotter.XYs{}
	for _, pt := range points {
		if _, ok := byAlpha[pt.Alpha]; !ok {
			alphas = append(alphas, pt.Alpha)
		}
		byAlpha[pt.Alpha] = append(byAlpha[pt.Alpha], plotter.XY{X: pt.PF, Y: pt.Availability})
	}
	for i, a := range alphas {
		col := plotutil.Color(i)
		l, s, err := plotter.NewLinePoints(byAlpha[a])
		if err != nil {
			return err
		}
		l.Color, s.Color = col, col
		s.Shape = plotutil.Shape(i)
		p.Add(l, s)
		p.Legend.Add(fmt.Sprintf("α = %.1f", a), l, s)
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
	p.Add(plotter.NewGrid())
	return p.Save(7*vg.Inch, 4.5*vg.Inch, file)
}

func faded(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 160}
}
