//go:build !race

package ticketd

const raceEnabled = false
