// Package driver runs one node.Machine on a real transport. A single
// goroutine owns the machine: it decodes inbound frames and Steps them,
// Ticks the machine when its Wake time arrives (a timer, never polling),
// seals and sends what Ready returns and hands events to the caller. A
// second goroutine pumps the transport; golang.org/x/sync/errgroup ties
// their lifetimes together.
//
// The driver also answers the control family's status query for every
// tool: the frame counters plus the machine's own Status, if it has one.
// The driver imports no protocol package.
package driver
