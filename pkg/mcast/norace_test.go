//go:build !race

package mcast

const raceOn = false
