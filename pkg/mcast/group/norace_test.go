//go:build !race

package group

const raceOn = false
