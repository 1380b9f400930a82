package group

// heldFirst is the sim.Options.HeldFirst of the fault runs: on odd seeds a
// resumed member is handed its queued messages before its first tick half
// the time, as a real driver that reads its socket before its timer fires
// may do; even seeds keep the simulator's default order (tick first).
func heldFirst(seed uint64) float64 {
	if seed%2 == 1 {
		return 0.5
	}
	return 0
}
