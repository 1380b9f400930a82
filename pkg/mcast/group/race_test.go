//go:build race

package group

// raceOn: the race detector is on. The simulator runs on one goroutine, so
// the long planted-bug sweeps have nothing for it to find and are left to
// the plain run (scripts/test.sh runs both).
const raceOn = true
