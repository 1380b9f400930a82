//go:build !race

package ticketsim

const raceEnabled = false
