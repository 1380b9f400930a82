package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
)

var (
	oldKey   = bytes.Repeat([]byte{1}, KeySize)
	newKey   = bytes.Repeat([]byte{2}, KeySize)
	otherKey = bytes.Repeat([]byte{3}, KeySize)
)

func keys(t testing.TB, keys ...[]byte) *Keyring {
	t.Helper()
	k, err := NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestParseKeys(t *testing.T) {
	h1, h2 := hex.EncodeToString(oldKey), hex.EncodeToString(newKey)
	raw := bytes.Repeat([]byte{'#'}, KeySize) // raw bytes that look like a comment
	for _, c := range []struct {
		name string
		file string
		want [][]byte
		err  string
	}{
		{"raw", string(newKey), [][]byte{newKey}, ""},
		{"raw like a comment", string(raw), [][]byte{raw}, ""},
		{"hex", h1 + "\n", [][]byte{oldKey}, ""},
		{"hex with spaces", "  " + h1 + "  \r\n", [][]byte{oldKey}, ""},
		{"two with comments", "# new key, sealing since today\n" + h2 + "\n\n# old key\n" + h1 + "\n", [][]byte{newKey, oldKey}, ""},
		{"bad line", h1 + "\n" + h2[:10] + "\n", nil, "line 2"},
		{"not hex", strings.Repeat("zz", KeySize), nil, "line 1"},
		{"empty", "", nil, "no key"},
		{"only comments", "# nothing here\n\n", nil, "no key"},
		{"too many", strings.Repeat(h1+"\n", MaxKeys+1), nil, "more than"},
	} {
		got, err := ParseKeys([]byte(c.file))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && fmt.Sprint(got) != fmt.Sprint(c.want):
			t.Errorf("%s: got %x, want %x", c.name, got, c.want)
		}
	}
}

// TestRotation walks the three steps of a key change between two members
// whose keyrings are replaced in place, as SIGHUP does: at every step each
// member opens what the other seals, only that key is tried, and the
// replay state survives the changes.
func TestRotation(t *testing.T) {
	ka, kb := keys(t, oldKey), keys(t, oldKey)
	a := NewFramerRing("c", 1, 100, ka)
	b := NewFramerRing("c", 2, 200, kb)
	var sent [][]byte
	exchange := func(step string) {
		t.Helper()
		fa, _ := a.Seal(FamilyMutex, 1, 2, []byte(step))
		fb, _ := b.Seal(FamilyMutex, 1, 1, []byte(step))
		if _, p, err := b.Open(fa); err != nil || string(p) != step {
			t.Fatalf("%s: b opening a's frame: %q %v", step, p, err)
		}
		if _, p, err := a.Open(fb); err != nil || string(p) != step {
			t.Fatalf("%s: a opening b's frame: %q %v", step, p, err)
		}
		sent = append(sent, fa)
	}
	exchange("before")
	// Step 1: the new key second, one member after the other.
	mustSet(t, ka, oldKey, newKey)
	exchange("a has both")
	mustSet(t, kb, oldKey, newKey)
	exchange("step 1 done")
	// Step 2: the new key first. A member that switched seals with the
	// new key, which every member already opens.
	mustSet(t, ka, newKey, oldKey)
	exchange("a seals with the new key")
	if got := headerKeyID(t, sent[len(sent)-1]); got != KeyID(newKey) {
		t.Fatalf("a's frame names key %04x, want the new key %04x", got, KeyID(newKey))
	}
	mustSet(t, kb, newKey, oldKey)
	exchange("step 2 done")
	// Step 3: the old key goes.
	mustSet(t, ka, newKey)
	exchange("a has the new key only")
	mustSet(t, kb, newKey)
	exchange("step 3 done")
	if a.Auth.Load()+b.Auth.Load() != 0 {
		t.Fatalf("authentication failures during the rotation: %v %v", a.Snapshot(), b.Snapshot())
	}
	// Every frame a sent, under whichever key, is now a replay or a
	// frame of a key that is gone: never accepted twice.
	for i, f := range sent {
		_, _, err := b.Open(f)
		if headerKeyID(t, f) == KeyID(newKey) {
			if !errors.Is(err, ErrReplay) {
				t.Errorf("frame %d (new key) replayed: %v, want ErrReplay", i, err)
			}
		} else if !errors.Is(err, ErrAuth) {
			t.Errorf("frame %d (old key) replayed after the old key left: %v, want ErrAuth", i, err)
		}
	}
}

// TestReplayAcrossKeys: while both keys open, a frame is accepted once
// whichever key sealed it, and frames of the two keys arriving out of
// order share one replay window.
func TestReplayAcrossKeys(t *testing.T) {
	ka := keys(t, oldKey)
	a := NewFramerRing("c", 1, 100, ka)
	b := NewFramerRing("c", 2, 200, keys(t, oldKey, newKey))
	early, _ := a.Seal(FamilyMutex, 1, 2, nil) // old key, seq 1
	mustSet(t, ka, newKey, oldKey)
	late, _ := a.Seal(FamilyMutex, 1, 2, nil) // new key, seq 2
	for _, f := range [][]byte{late, early} {
		if _, _, err := b.Open(f); err != nil {
			t.Fatalf("first delivery: %v", err)
		}
	}
	for _, f := range [][]byte{early, late} {
		if _, _, err := b.Open(f); !errors.Is(err, ErrReplay) {
			t.Fatalf("second delivery: %v, want ErrReplay", err)
		}
	}
	if b.Replay.Load() != 2 || b.Accepted.Load() != 2 {
		t.Fatalf("counters: %v", b.Snapshot())
	}
}

// TestUnknownKey: a frame sealed with a key the ring does not hold (yet,
// or any more) is dropped and counted as an authentication failure, and
// leaves no state behind: the same sender's frames under a known key are
// taken afterwards.
func TestUnknownKey(t *testing.T) {
	ks := keys(t, otherKey)
	s := NewFramerRing("c", 1, 100, ks)
	b := NewFramerRing("c", 2, 200, keys(t, newKey, oldKey))
	f, _ := s.Seal(FamilyMutex, 1, 2, nil)
	if _, _, err := b.Open(f); !errors.Is(err, ErrAuth) {
		t.Fatalf("frame of an unknown key: %v, want ErrAuth", err)
	}
	if b.Auth.Load() != 1 || len(b.peers) != 0 {
		t.Fatalf("counters %v, state kept for %d senders", b.Snapshot(), len(b.peers))
	}
	// The header is authenticated: relabelling the frame with a key the
	// ring holds does not open it either.
	relabel := append([]byte(nil), f...)
	relabel[6], relabel[7] = byte(KeyID(oldKey)>>8), byte(KeyID(oldKey))
	if _, _, err := b.Open(relabel); !errors.Is(err, ErrAuth) {
		t.Fatalf("relabelled frame: %v, want ErrAuth", err)
	}
	mustSet(t, ks, oldKey)
	g, _ := s.Seal(FamilyMutex, 1, 2, nil)
	if _, _, err := b.Open(g); err != nil {
		t.Fatalf("the sender with a known key: %v", err)
	}
	if b.Auth.Load() != 2 || b.Accepted.Load() != 1 {
		t.Fatalf("counters: %v", b.Snapshot())
	}
}

// TestKeyIDCollision: two keys of one ring that share a key ID both open.
func TestKeyIDCollision(t *testing.T) {
	byID := map[uint16][]byte{}
	var k1, k2 []byte
	for i := 0; k2 == nil; i++ {
		k := bytes.Repeat([]byte{0}, KeySize)
		k[0], k[1], k[2] = byte(i), byte(i>>8), byte(i>>16)
		if prev, ok := byID[KeyID(k)]; ok {
			k1, k2 = prev, k
		}
		byID[KeyID(k)] = k
	}
	b := NewFramerRing("c", 2, 200, keys(t, k1, k2))
	for i, k := range [][]byte{k1, k2} {
		s := NewFramerRing("c", node.ID(10+i), 100, keys(t, k))
		f, _ := s.Seal(FamilyMutex, 1, 2, nil)
		if _, _, err := b.Open(f); err != nil {
			t.Fatalf("key %d of two sharing ID %04x: %v", i+1, KeyID(k), err)
		}
	}
}

// TestKeyringConcurrent: keys change while frames are sealed and opened
// (run with -race); every frame opens, since both keys stay in both rings.
func TestKeyringConcurrent(t *testing.T) {
	ka, kb := keys(t, oldKey, newKey), keys(t, oldKey, newKey)
	a := NewFramerRing("c", 1, 100, ka)
	b := NewFramerRing("c", 2, 200, kb)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			if i%2 == 0 {
				mustSet(t, ka, newKey, oldKey)
				mustSet(t, kb, oldKey, newKey)
			} else {
				mustSet(t, ka, oldKey, newKey)
				mustSet(t, kb, newKey, oldKey)
			}
		}
	}()
	for i := 0; i < 2000; i++ {
		f, _ := a.Seal(FamilyMutex, 1, 2, nil)
		if _, _, err := b.Open(f); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	wg.Wait()
}

func TestKeyringReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.key")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(hex.EncodeToString(oldKey) + "\n")
	k, err := LoadKeyring(path)
	if err != nil {
		t.Fatal(err)
	}
	write(hex.EncodeToString(newKey) + "\n" + hex.EncodeToString(oldKey) + "\n")
	if err := k.Reload(path); err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("%04x", KeyID(newKey)), fmt.Sprintf("%04x", KeyID(oldKey))}
	if fmt.Sprint(k.IDs()) != fmt.Sprint(want) {
		t.Fatalf("ids %v, want %v", k.IDs(), want)
	}
	write("not a key\n")
	if err := k.Reload(path); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("bad file: %v", err)
	}
	if fmt.Sprint(k.IDs()) != fmt.Sprint(want) {
		t.Fatalf("a bad file changed the keys: %v", k.IDs())
	}
}

func mustSet(t testing.TB, k *Keyring, keys ...[]byte) {
	t.Helper()
	if err := k.Set(keys...); err != nil {
		t.Error(err)
	}
}

func headerKeyID(t testing.TB, frame []byte) uint16 {
	t.Helper()
	h, err := ParseHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	return h.KeyID
}

func FuzzParseKeys(f *testing.F) {
	f.Add([]byte(hex.EncodeToString(oldKey) + "\n# old\n" + hex.EncodeToString(newKey)))
	f.Add(oldKey)
	f.Add([]byte("#\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := ParseKeys(b)
		if err != nil {
			return
		}
		if len(keys) == 0 || len(keys) > MaxKeys {
			t.Fatalf("%d keys", len(keys))
		}
		if _, err := NewKeyring(keys...); err != nil {
			t.Fatalf("parsed keys do not make a ring: %v", err)
		}
	})
}
