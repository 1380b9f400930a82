//go:build !race

package coords

const raceOn = false
