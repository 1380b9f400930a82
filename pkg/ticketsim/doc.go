// Package ticketsim is `ticketd sim`: the availability experiment of the
// seed's §4 played by pkg/ticket's machines in the deterministic simulator
// (Simulate), its grid over α and p_f (Sweep), and the grid's plot (Plot,
// in a build with -tags plot). Only cmd/ticketd imports it; the service,
// pkg/ticketd, never runs the simulator.
package ticketsim
