package wire

import (
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// KeySize is the AES-256 key size in bytes.
const KeySize = 32

const (
	nonceSize = 12
	tagSize   = 16
	// replayWindow is how many sequence numbers below the highest seen are
	// still accepted once (out-of-order delivery); anything older is dropped.
	replayWindow = 64
)

// Counters are the Framer's frame counts by outcome. They are safe to read
// while the Framer is in use.
type Counters struct {
	Sent, Accepted                                             atomic.Uint64
	Malformed, Version, Cluster, Auth, Unsealed, Stale, Replay atomic.Uint64
	Misdirected, Stranger                                      atomic.Uint64
}

// Snapshot returns the counters as a name → value map, for status output.
func (c *Counters) Snapshot() map[string]uint64 {
	return map[string]uint64{
		"sent": c.Sent.Load(), "accepted": c.Accepted.Load(),
		"dropped_malformed": c.Malformed.Load(), "dropped_version": c.Version.Load(),
		"dropped_cluster": c.Cluster.Load(), "dropped_auth": c.Auth.Load(),
		"dropped_unsealed": c.Unsealed.Load(), "dropped_stale": c.Stale.Load(),
		"dropped_replay": c.Replay.Load(), "dropped_misdirected": c.Misdirected.Load(),
		"dropped_stranger": c.Stranger.Load(),
	}
}

func (c *Counters) count(err error) {
	switch {
	case err == nil:
		c.Accepted.Add(1)
	case errors.Is(err, ErrVersion):
		c.Version.Add(1)
	case errors.Is(err, ErrCluster):
		c.Cluster.Add(1)
	case errors.Is(err, ErrAuth):
		c.Auth.Add(1)
	case errors.Is(err, ErrUnsealed):
		c.Unsealed.Add(1)
	case errors.Is(err, ErrStale), errors.Is(err, ErrFuture):
		c.Stale.Add(1)
	case errors.Is(err, ErrMisdirect):
		c.Misdirected.Add(1)
	case errors.Is(err, ErrStranger):
		c.Stranger.Add(1)
	case errors.Is(err, ErrReplay):
		c.Replay.Add(1)
	default:
		c.Malformed.Add(1)
	}
}

// Framer seals outgoing frames for one sender and opens incoming ones,
// enforcing cluster, authentication, incarnation and replay rules. It is
// safe for concurrent use.
type Framer struct {
	cluster     uint32
	self        node.ID
	incarnation uint64
	keys        *Keyring // nil: frames travel unsealed

	seq atomic.Uint64
	Counters

	now func() time.Time // for the incarnation bound; time.Now unless a test sets it

	members map[node.ID]bool // with Only: the senders kept state for, beside clients

	unaddressed bool // AcceptUnaddressed: control frames to Anyone open too

	mu      sync.Mutex
	peers   map[node.ID]*replayState
	clients int // entries in peers with a client ID
}

// ClientIDBase starts the IDs that short-lived clients (status queries)
// draw at random for themselves: member IDs stay below it.
const ClientIDBase node.ID = 0xF0000000

// maxClients bounds the replay state kept for client IDs. Each status
// query comes from a fresh random ID, so without a bound a long-lived
// member would keep one entry per query it ever answered. When the bound
// is reached an arbitrary client's entry is forgotten: a replay of that
// client's old query would then be answered again, which costs one status
// reply; members' entries are never forgotten.
const maxClients = 1024

type replayState struct {
	incarnation uint64
	top         uint64 // highest sequence number accepted
	window      uint64 // bit i set: top-i was accepted
}

// NewFramer returns a Framer for sender self in cluster. incarnation must
// grow every time the process restarts (the start time in nanoseconds is the
// usual choice). key is nil for unsealed frames, or a KeySize-byte key.
func NewFramer(cluster string, self node.ID, incarnation uint64, key []byte) (*Framer, error) {
	var keys *Keyring
	if key != nil {
		var err error
		if keys, err = NewKeyring(key); err != nil {
			return nil, err
		}
	}
	return NewFramerRing(cluster, self, incarnation, keys), nil
}

// NewFramerRing is NewFramer with a keyring (nil for unsealed frames):
// frames are sealed with its first key and opened with whichever of its
// keys sealed them, as the keyring holds them at the time.
func NewFramerRing(cluster string, self node.ID, incarnation uint64, keys *Keyring) *Framer {
	return &Framer{cluster: ClusterHash(cluster), self: self, incarnation: incarnation, keys: keys,
		peers: map[node.ID]*replayState{}, now: time.Now}
}

// Only restricts the senders this Framer takes frames from to members
// (and short-lived clients, whose IDs start at ClientIDBase and whose
// state is bounded): a frame from anyone else is dropped before any state
// is kept for it, so a flood of frames from made-up sender IDs costs no
// memory. Call it before the Framer is in use.
func (f *Framer) Only(members []node.ID) {
	f.members = map[node.ID]bool{}
	for _, m := range members {
		f.members[m] = true
	}
}

// Anyone is the receiver of a frame for whichever member is at the
// address it is sent to (AcceptUnaddressed). Client IDs stay below it.
const Anyone node.ID = 0xFFFFFFFF

// AcceptUnaddressed lets control-family frames addressed to Anyone open
// here: a first contact with a member whose ID the sender does not
// know yet (a join through an address). Sealed, such a frame still proves
// its sender holds the key; it can be replayed to another member, which
// costs that member one answer to the frame's source. Call it before the
// Framer is in use.
func (f *Framer) AcceptUnaddressed() { f.unaddressed = true }

// Sealed reports whether this Framer seals and requires sealed frames.
func (f *Framer) Sealed() bool { return f.keys != nil }

// Self returns the sender ID written into every frame.
func (f *Framer) Self() node.ID { return f.self }

// MaxPayload is the largest payload a sealed frame holds.
const MaxPayload = MaxFrame - HeaderSize - nonceSize - tagSize

// Seal builds a complete frame for one message to receiver to. Sealed,
// the header — receiver and cluster included — is authenticated, so the
// frame opens only at that receiver.
func (f *Framer) Seal(fam Family, typ uint8, to node.ID, payload []byte) ([]byte, error) {
	size := HeaderSize + len(payload)
	if f.keys != nil {
		size += nonceSize + tagSize
	}
	if size > MaxFrame {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, size)
	}
	h := Header{Family: fam, Type: typ, Sealed: f.keys != nil, Cluster: f.cluster, From: f.self, To: to,
		Incarnation: f.incarnation, Seq: f.seq.Add(1)}
	out := make([]byte, HeaderSize, size)
	if f.keys == nil {
		PutHeader(out, h)
		out = append(out, payload...)
	} else {
		k := f.keys.cur.Load().seal
		h.KeyID = k.id
		PutHeader(out, h)
		// A random 96-bit nonce per frame: nonces never repeat across
		// restarts of the same sender, unlike a counter would.
		var nonce [nonceSize]byte
		if _, err := rand.Read(nonce[:]); err != nil {
			return nil, err
		}
		out = append(out, nonce[:]...)
		out = k.aead.Seal(out, nonce[:], payload, out[:HeaderSize])
	}
	f.Sent.Add(1)
	return out, nil
}

// Open checks and decodes a frame. On success it returns the header and the
// plaintext payload. Every call is counted by outcome.
func (f *Framer) Open(frame []byte) (Header, []byte, error) {
	h, p, err := f.open(frame)
	f.count(err)
	return h, p, err
}

func (f *Framer) open(frame []byte) (Header, []byte, error) {
	h, err := ParseHeader(frame)
	if err != nil {
		return h, nil, err
	}
	if h.Cluster != f.cluster {
		return h, nil, ErrCluster
	}
	if h.To != f.self && !(f.unaddressed && h.To == Anyone && h.Family == FamilyControl) {
		return h, nil, ErrMisdirect
	}
	if f.members != nil && !f.members[h.From] && h.From < ClientIDBase {
		return h, nil, ErrStranger
	}
	payload := frame[HeaderSize:]
	switch {
	case f.keys == nil && h.Sealed:
		return h, nil, fmt.Errorf("%w: sealed frame but no key configured", ErrAuth)
	case f.keys != nil && !h.Sealed:
		return h, nil, ErrUnsealed
	case f.keys != nil:
		if len(payload) < nonceSize+tagSize {
			return h, nil, fmt.Errorf("%w: short sealed payload", ErrMalformed)
		}
		// The header names the key that sealed the frame: only that key
		// is tried (a frame sealed with a key this ring no longer or not
		// yet holds fails authentication like a forged one).
		opened := false
		for _, aead := range f.keys.cur.Load().open[h.KeyID] {
			if pt, err := aead.Open(nil, payload[:nonceSize], payload[nonceSize:], frame[:HeaderSize]); err == nil {
				payload, opened = pt, true
				break
			}
		}
		if !opened {
			return h, nil, ErrAuth
		}
	}
	if err := f.admit(h, f.keys != nil); err != nil {
		return h, nil, err
	}
	return h, payload, nil
}

// aside: a frame to Anyone (a new member's hello) from a known sender
// under a newer incarnation is let through without touching that
// sender's state. (An older incarnation stays stale: a captured hello
// replayed later is dropped, as every other replay is.) It may be a second process that took a member's ID by
// mistake, to be refused; were it made the sender's new life, the real
// member's frames would be stale from then on. A process that is let in
// takes over with its first addressed frame.
func (f *Framer) aside(h Header) bool {
	if h.To != Anyone {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.peers[h.From]
	return st != nil && h.Incarnation > st.incarnation
}

// FutureIncarnation bounds how far ahead of this process's clock a
// sealed frame's incarnation (its sender's start time in nanoseconds) may
// be: a larger one is dropped rather than made the sender's new life.
const FutureIncarnation = time.Hour

// admit applies the incarnation and replay rules and records the frame.
//
// Sealed frames' incarnations are authenticated: a higher one is the
// sender's new life, a lower one a stale frame of an old life. Unsealed
// frames' are not, and one forged frame with a huge incarnation would
// make every real frame of that sender stale for good; so without a key
// a change of incarnation either way starts the sender's state afresh
// (replays within one incarnation are still dropped).
func (f *Framer) admit(h Header, authenticated bool) error {
	if authenticated && h.Incarnation > uint64(f.now().Add(FutureIncarnation).UnixNano()) {
		return ErrFuture
	}
	if f.aside(h) {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.peers[h.From]
	switch {
	case st == nil || h.Incarnation > st.incarnation || !authenticated && h.Incarnation != st.incarnation:
		if st == nil && h.From >= ClientIDBase {
			if f.clients >= maxClients {
				for id := range f.peers {
					if id >= ClientIDBase {
						delete(f.peers, id)
						f.clients--
						break
					}
				}
			}
			f.clients++
		}
		f.peers[h.From] = &replayState{incarnation: h.Incarnation, top: h.Seq, window: 1}
		return nil
	case h.Incarnation < st.incarnation:
		return ErrStale
	case h.Seq > st.top:
		shift := h.Seq - st.top
		if shift >= replayWindow {
			st.window = 1
		} else {
			st.window = st.window<<shift | 1
		}
		st.top = h.Seq
		return nil
	}
	back := st.top - h.Seq
	if back >= replayWindow || st.window&(1<<back) != 0 {
		return ErrReplay
	}
	st.window |= 1 << back
	return nil
}
