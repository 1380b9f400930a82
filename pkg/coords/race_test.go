//go:build race

package coords

// raceOn: the race detector is on. The GNP sweeps are single-goroutine
// arithmetic with nothing for it to find, so under it only the dimensions
// the seed names are run (scripts/test.sh runs both).
const raceOn = true
