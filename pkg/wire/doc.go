// Package wire is roundtable's on-the-wire format: a fixed 36-byte header,
// an optional AES-256-GCM seal, length-prefixed framing for stream
// transports, and small bounds-checked encoders for message payloads.
//
// Frame layout (all integers big-endian):
//
//	offset size field
//	0      2    magic "RT"
//	2      1    version (3)
//	3      1    family (which protocol: election, mutex, ...)
//	4      1    message type (per family, append-only)
//	5      1    flags (bit 0: sealed)
//	6      2    key ID (sealed: which key of the ring sealed the frame; else 0)
//	8      4    cluster hash (FNV-1a of the cluster name)
//	12     4    sender ID
//	16     4    receiver ID
//	20     8    sender incarnation (grows on every restart)
//	28     8    sequence number (grows per frame within an incarnation)
//	36     ...  payload, or when sealed: 12-byte nonce, ciphertext, 16-byte tag
//
// A sealed frame authenticates the whole header as associated data, so a
// frame cannot be re-addressed, re-typed, moved to another cluster or
// relabelled with another key. A Keyring holds several keys: the first
// seals, every one opens, so a cluster changes keys in three steps without
// a moment where two members do not understand each other. The Framer
// drops, and counts, frames that are malformed, fail authentication (a key
// not in the ring included), belong to another cluster, carry an
// incarnation older than one already seen from that sender, or repeat a
// sequence number; replay state is per sender, whichever key sealed.
package wire
