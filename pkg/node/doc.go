// Package node defines the contract every roundtable protocol implements.
//
// A protocol is a pure state machine (Machine): it is fed peer messages and
// local requests through Step, told that time has passed through Tick, and
// drained through Ready, which returns the messages to send, the events to
// report and the earliest time it wants Tick again (Wake). A Machine never
// reads a clock, opens a socket, sleeps or starts a goroutine; the same
// machine therefore runs unchanged on real sockets (package driver) and in the
// deterministic simulator (package sim).
package node
