//go:build race

package gossip

// raceEnabled: the race detector is on; the simulator runs on one
// goroutine, so the long seed sweeps are left to the plain run.
const raceEnabled = true
