//go:build !plot

package ticketsim

// CanPlot: this build draws plots. The default build does not: gonum/plot
// parses a dozen fonts when a program starts, which every `ticketd run`
// (and its watchdog) would pay for, about 0.6 ms each. Build with
// -tags plot for `ticketd sim --plot`.
const CanPlot = false

// Plot reports ErrNoPlot: see CanPlot.
func Plot(points []SweepPoint, title, file string) error { return ErrNoPlot }
