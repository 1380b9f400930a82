//go:build race

package ticketsim

// raceEnabled: the race detector is on; the simulator runs on one
// goroutine, so the 10,000-process run is left to the plain run.
const raceEnabled = true
