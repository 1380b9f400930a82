//go:build !race

package ticket

const raceOn = false
