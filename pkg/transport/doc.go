// Package transport moves frames between processes: UDP datagrams, TCP
// streams with length-prefixed frames, an in-memory network for tests, and a
// seeded fault-injecting wrapper (drop, delay, duplicate, reorder, one-way
// cut) around any of them.
//
// Transports carry opaque frames; they neither parse nor trust them.
// Authentication and replay protection live in package wire.
package transport
