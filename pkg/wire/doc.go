// Package wire is roundtable's on-the-wire format: a fixed 32-byte header,
// an optional AES-256-GCM seal, length-prefixed framing for stream
// transports, and small bounds-checked encoders for message payloads.
//
// Frame layout (all integers big-endian):
//
//	offset size field
//	0      2    magic "RT"
//	2      1    version (1)
//	3      1    family (which protocol: election, mutex, ...)
//	4      1    message type (per family, append-only)
//	5      1    flags (bit 0: sealed)
//	6      2    reserved, must be zero
//	8      4    cluster hash (FNV-1a of the cluster name)
//	12     4    sender ID
//	16     8    sender incarnation (grows on every restart)
//	24     8    sequence number (grows per frame within an incarnation)
//	32     ...  payload, or when sealed: 12-byte nonce, ciphertext, 16-byte tag
//
// A sealed frame authenticates the whole header as associated data, so a
// frame cannot be re-addressed, re-typed or moved to another cluster. The
// Framer drops, and counts, frames that are malformed, fail
// authentication, belong to another cluster, carry an incarnation older than
// one already seen from that sender, or repeat a sequence number.
package wire
