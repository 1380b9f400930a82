//go:build !race

package mutex

const raceOn = false
