package wire

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// MaxKeys bounds how many keys a keyring holds. A rotation needs two.
const MaxKeys = 16

// KeyID is the short identifier of a key carried in every sealed frame's
// header, so that a receiver opens the frame with that key instead of
// trying each one. It is the first two bytes of a hash of the key: it
// tells keys apart, it does not keep them secret from each other (two
// keys of one ring may share an ID; both are then tried).
func KeyID(key []byte) uint16 {
	h := sha256.New()
	h.Write([]byte("roundtable key id\x00"))
	h.Write(key)
	return binary.BigEndian.Uint16(h.Sum(nil))
}

// Keyring holds the keys a Framer seals and opens with: the first key
// seals, every key opens. Its keys can be replaced while Framers use it
// (Set), which is how a cluster changes its key without stopping: add the
// new key second everywhere, then make it first everywhere, then remove
// the old one. It is safe for concurrent use. Make one with NewKeyring or
// LoadKeyring: the zero value holds no key.
type Keyring struct {
	cur atomic.Pointer[ring]
}

type ring struct {
	seal sealKey
	open map[uint16][]cipher.AEAD
	ids  []uint16 // in file order, for logs
}

type sealKey struct {
	id   uint16
	aead cipher.AEAD
}

// NewKeyring returns a keyring of keys, the first of which seals. Each key
// is KeySize bytes.
func NewKeyring(keys ...[]byte) (*Keyring, error) {
	k := &Keyring{}
	if err := k.Set(keys...); err != nil {
		return nil, err
	}
	return k, nil
}

// LoadKeyring reads a key file (see ParseKeys) into a new keyring.
func LoadKeyring(path string) (*Keyring, error) {
	keys, err := LoadKeys(path)
	if err != nil {
		return nil, err
	}
	return NewKeyring(keys...)
}

// Set replaces the keyring's keys at once: frames sealed from then on use
// keys[0], frames opened from then on may have been sealed with any of
// keys. On error the keys are left as they were.
func (k *Keyring) Set(keys ...[]byte) error {
	if len(keys) == 0 {
		return errors.New("wire: a keyring needs at least one key")
	}
	if len(keys) > MaxKeys {
		return fmt.Errorf("wire: %d keys, at most %d", len(keys), MaxKeys)
	}
	r := &ring{open: map[uint16][]cipher.AEAD{}}
	seen := map[string]bool{}
	for i, key := range keys {
		if len(key) != KeySize {
			return fmt.Errorf("wire: key %d must be %d bytes, got %d", i+1, KeySize, len(key))
		}
		if seen[string(key)] {
			continue
		}
		seen[string(key)] = true
		block, err := aes.NewCipher(key)
		if err != nil {
			return err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return err
		}
		id := KeyID(key)
		if i == 0 {
			r.seal = sealKey{id: id, aead: aead}
		}
		r.open[id] = append(r.open[id], aead)
		r.ids = append(r.ids, id)
	}
	k.cur.Store(r)
	return nil
}

// Reload reads path (see ParseKeys) and, if it holds valid keys, makes
// them the keyring's keys. On error the keyring keeps its keys.
func (k *Keyring) Reload(path string) error {
	keys, err := LoadKeys(path)
	if err != nil {
		return err
	}
	return k.Set(keys...)
}

// IDs returns the IDs of the keyring's keys, the sealing key's first, as
// hexadecimal strings for logs and status.
func (k *Keyring) IDs() []string {
	var out []string
	for _, id := range k.cur.Load().ids {
		out = append(out, fmt.Sprintf("%04x", id))
	}
	return out
}

// LoadKeys reads a key file; see ParseKeys.
func LoadKeys(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wire: key file: %w", err)
	}
	keys, err := ParseKeys(b)
	if err != nil {
		return nil, fmt.Errorf("wire: key file %s: %w", path, err)
	}
	return keys, nil
}

// LoadKey reads a key file and returns its first key, the one that seals.
func LoadKey(path string) ([]byte, error) {
	keys, err := LoadKeys(path)
	if err != nil {
		return nil, err
	}
	return keys[0], nil
}

// ParseKeys decodes a key file: one key per line as 2*KeySize hexadecimal
// characters, blank lines and lines starting with '#' ignored, the first
// key first; or, for a single key, exactly KeySize raw bytes.
func ParseKeys(b []byte) ([][]byte, error) {
	keys, lineErr := parseKeyLines(b)
	switch {
	case lineErr == nil && len(keys) > 0:
		return keys, nil
	case len(b) == KeySize:
		return [][]byte{append([]byte(nil), b...)}, nil
	case lineErr != nil:
		return nil, lineErr
	}
	return nil, fmt.Errorf("no key: want lines of %d hex characters, or %d raw bytes", 2*KeySize, KeySize)
}

func parseKeyLines(b []byte) ([][]byte, error) {
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		k, err := hex.DecodeString(s)
		if err != nil || len(k) != KeySize {
			return nil, fmt.Errorf("line %d: want %d hex characters (or the whole file %d raw bytes)", n, 2*KeySize, KeySize)
		}
		if len(keys) == MaxKeys {
			return nil, fmt.Errorf("more than %d keys", MaxKeys)
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return keys, nil
}
