package wire

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

var testKey = bytes.Repeat([]byte{7}, KeySize)

func pair(t testing.TB, key []byte) (*Framer, *Framer) {
	a, err := NewFramer("c", 1, 100, key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewFramer("c", 2, 200, key)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestSealOpen(t *testing.T) {
	for _, key := range [][]byte{nil, testKey} {
		a, b := pair(t, key)
		f, err := a.Seal(FamilyElection, 4, 2, []byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		h, p, err := b.Open(f)
		if err != nil || string(p) != "hello" || h.From != 1 || h.Type != 4 || h.Family != FamilyElection || h.Sealed != (key != nil) {
			t.Fatalf("key=%v: got %+v %q %v", key != nil, h, p, err)
		}
		if _, _, err := b.Open(f); !errors.Is(err, ErrReplay) {
			t.Fatalf("replayed frame: got %v, want ErrReplay", err)
		}
		if b.Replay.Load() != 1 || b.Accepted.Load() != 1 {
			t.Fatalf("counters: %v", b.Snapshot())
		}
	}
}

func TestRejections(t *testing.T) {
	a, b := pair(t, testKey)
	wrong, _ := NewFramer("c", 3, 1, bytes.Repeat([]byte{9}, KeySize))
	plain, _ := NewFramer("c", 4, 1, nil)
	other, _ := NewFramer("other", 5, 1, testKey)
	good, _ := a.Seal(FamilyElection, 1, 2, []byte("x"))
	tampered := append([]byte(nil), good...)
	tampered[13] ^= 1 // change the sender ID: the header is authenticated
	w, _ := wrong.Seal(FamilyElection, 1, 2, []byte("x"))
	p, _ := plain.Seal(FamilyElection, 1, 2, []byte("x"))
	o, _ := other.Seal(FamilyElection, 1, 2, []byte("x"))
	cases := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"wrong key", w, ErrAuth},
		{"tampered header", tampered, ErrAuth},
		{"unsealed", p, ErrUnsealed},
		{"other cluster", o, ErrCluster},
		{"short", good[:10], ErrMalformed},
		{"bad magic", append([]byte("XX"), good[2:]...), ErrMalformed},
	}
	for _, c := range cases {
		if _, _, err := b.Open(c.frame); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if b.Accepted.Load() != 0 || b.Auth.Load() != 2 {
		t.Errorf("counters: %v", b.Snapshot())
	}
}

func TestIncarnationAndWindow(t *testing.T) {
	_, b := pair(t, testKey)
	old, _ := NewFramer("c", 1, 100, testKey)
	newer, _ := NewFramer("c", 1, 101, testKey)
	var frames [][]byte
	for i := 0; i < 70; i++ {
		f, _ := old.Seal(FamilyElection, 1, 2, nil)
		frames = append(frames, f)
	}
	// Out of order within the window is fine, once.
	for _, i := range []int{5, 3, 4, 69} {
		if _, _, err := b.Open(frames[i]); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
	if _, _, err := b.Open(frames[3]); !errors.Is(err, ErrReplay) {
		t.Fatalf("repeat: %v", err)
	}
	if _, _, err := b.Open(frames[4]); !errors.Is(err, ErrReplay) {
		t.Fatalf("older than the window: %v", err)
	}
	f, _ := newer.Seal(FamilyElection, 1, 2, nil)
	if _, _, err := b.Open(f); err != nil {
		t.Fatalf("restarted sender: %v", err)
	}
	if _, _, err := b.Open(frames[60]); !errors.Is(err, ErrStale) {
		t.Fatalf("old incarnation after restart: %v", err)
	}
}

// TestHelloAside: a hello (a control frame to Anyone) from a second
// process under a member's ID, with a newer incarnation, opens but does
// not make the member's own frames stale, with or without a key; the
// newer process's first addressed frame takes over.
func TestHelloAside(t *testing.T) {
	for _, key := range [][]byte{nil, testKey} {
		_, b := pair(t, key)
		b.AcceptUnaddressed()
		member, _ := NewFramer("c", 1, 100, key)
		dup, _ := NewFramer("c", 1, 101, key)
		f, _ := member.Seal(FamilyElection, 1, 2, nil)
		if _, _, err := b.Open(f); err != nil {
			t.Fatal(err)
		}
		hello, _ := dup.Seal(FamilyControl, 16, Anyone, nil)
		if _, _, err := b.Open(hello); err != nil {
			t.Fatalf("key=%v: hello: %v", key != nil, err)
		}
		f, _ = member.Seal(FamilyElection, 1, 2, nil)
		if _, _, err := b.Open(f); err != nil {
			t.Fatalf("key=%v: the member's frame after another process's hello under its ID: %v", key != nil, err)
		}
		f, _ = dup.Seal(FamilyElection, 1, 2, nil)
		if _, _, err := b.Open(f); err != nil {
			t.Fatalf("key=%v: the newer process's addressed frame: %v", key != nil, err)
		}
		if key != nil {
			f, _ = member.Seal(FamilyElection, 1, 2, nil)
			if _, _, err := b.Open(f); !errors.Is(err, ErrStale) {
				t.Fatalf("the older process after the newer took over: %v", err)
			}
			// A hello from the older incarnation (a capture replayed
			// later) is stale too: only a newer one is let aside.
			hello, _ = member.Seal(FamilyControl, 16, Anyone, nil)
			if _, _, err := b.Open(hello); !errors.Is(err, ErrStale) {
				t.Fatalf("an older incarnation's hello: %v", err)
			}
		}
	}
}

// TestReceiverBound: a frame sealed for member 2 does not open at member
// 3, even from an unchanged capture (the receiver is in the
// authenticated header), and a tampered receiver fails authentication.
func TestReceiverBound(t *testing.T) {
	for _, key := range [][]byte{nil, testKey} {
		a, _ := pair(t, key)
		c, _ := NewFramer("c", 3, 300, key)
		f, _ := a.Seal(FamilyMutex, 37, 2, []byte("grant"))
		if _, _, err := c.Open(f); !errors.Is(err, ErrMisdirect) || c.Misdirected.Load() != 1 {
			t.Fatalf("key=%v: frame for 2 opened at 3: %v", key != nil, err)
		}
		if key != nil {
			redirected := append([]byte(nil), f...)
			redirected[19] = 3 // To: 2 → 3
			if _, _, err := c.Open(redirected); !errors.Is(err, ErrAuth) {
				t.Fatalf("redirected sealed frame: %v, want ErrAuth", err)
			}
		}
	}
}

// TestForgedIncarnation: without a key, one frame forged "from 1" with
// the largest incarnation must not make 1's real frames stale; with a key,
// an incarnation an hour or more ahead of the clock is refused.
func TestForgedIncarnation(t *testing.T) {
	_, b := pair(t, nil)
	real, _ := NewFramer("c", 1, 100, nil)
	forged, _ := NewFramer("c", 1, ^uint64(0), nil)
	f, _ := forged.Seal(FamilyElection, 1, 2, nil)
	b.Open(f)
	for i := 0; i < 3; i++ {
		g, _ := real.Seal(FamilyElection, 1, 2, nil)
		if _, _, err := b.Open(g); err != nil {
			t.Fatalf("a real frame after a forged incarnation: %v", err)
		}
	}
	_, sb := pair(t, testKey)
	future, _ := NewFramer("c", 1, uint64(time.Now().Add(2*FutureIncarnation).UnixNano()), testKey)
	g, _ := future.Seal(FamilyElection, 1, 2, nil)
	if _, _, err := sb.Open(g); !errors.Is(err, ErrFuture) {
		t.Fatalf("sealed incarnation from the future: %v", err)
	}
}

func TestStreamFraming(t *testing.T) {
	var buf bytes.Buffer
	for _, f := range [][]byte{[]byte("a"), {}, bytes.Repeat([]byte("z"), 1000)} {
		if err := WriteFrame(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []int{1, 0, 1000} {
		f, err := ReadFrame(&buf)
		if err != nil || len(f) != want {
			t.Fatalf("got %d bytes, %v; want %d", len(f), err, want)
		}
	}
	huge := []byte{0xff, 0xff, 0xff, 0xff}
	if _, err := ReadFrame(bytes.NewReader(huge)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge length: %v", err)
	}
}

func FuzzOpen(f *testing.F) {
	a, _ := pair(f, testKey)
	good, _ := a.Seal(FamilyElection, 2, 2, []byte("payload"))
	f.Add(good)
	f.Add([]byte("RT\x01"))
	f.Add(make([]byte, HeaderSize))
	// Version 3: a frame sealed with the second key of a ring, and an
	// unsealed frame that names a key.
	rotated := NewFramerRing("c", 1, 1, keys(f, newKey, testKey))
	second, _ := rotated.Seal(FamilyMutex, 1, 2, []byte("rotated"))
	f.Add(second)
	plain, _ := NewFramer("c", 1, 1, nil)
	named, _ := plain.Seal(FamilyMutex, 1, 2, nil)
	named[6] = 1
	f.Add(named)
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, key := range [][]byte{nil, testKey} {
			b, _ := NewFramer("c", 2, 1, key)
			h, p, err := b.Open(frame)
			if err == nil && !key2sealed(key, h) {
				t.Fatalf("accepted a frame with the wrong sealing: %+v", h)
			}
			_ = p
		}
		b := NewFramerRing("c", 2, 1, keys(t, testKey, newKey))
		if h, _, err := b.Open(frame); err == nil && (!h.Sealed || h.KeyID != KeyID(testKey) && h.KeyID != KeyID(newKey)) {
			t.Fatalf("a two-key ring accepted a frame it did not seal: %+v", h)
		}
		_, _ = ReadFrame(bytes.NewReader(frame))
	})
}

func key2sealed(key []byte, h Header) bool { return h.Sealed == (key != nil) }

func FuzzDec(f *testing.F) {
	var e Enc
	e.Uvarint(300)
	e.Bytes([]byte("abc"))
	e.Bool(true)
	f.Add(e.B)
	f.Fuzz(func(t *testing.T, p []byte) {
		d := NewDec(p)
		d.Uvarint()
		b := d.Bytes(1 << 10)
		d.Bool()
		d.Count(1000, 4)
		d.U64()
		d.Varint()
		if d.Err() == nil && len(b) > 1<<10 {
			t.Fatal("Bytes exceeded its bound")
		}
	})
}

func ExampleFramer() {
	key := bytes.Repeat([]byte{1}, KeySize)
	alice, _ := NewFramer("demo", 1, 1, key)
	bob, _ := NewFramer("demo", 2, 1, key)
	frame, _ := alice.Seal(FamilyElection, 1, 2, []byte("hi"))
	h, payload, err := bob.Open(frame)
	fmt.Println(h.From, string(payload), err)
	_, _, err = bob.Open(frame)
	fmt.Println(err)
	// Output:
	// 1 hi <nil>
	// wire: replayed sequence number
}

// TestClientReplayStateBounded: every status query comes from a fresh
// client ID; a member answering many keeps at most maxClients entries for
// them, never forgets a member, and still drops a replay of a member's
// frame and of a recent client's.
func TestClientReplayStateBounded(t *testing.T) {
	_, b := pair(t, testKey)
	member, err := NewFramer("c", 1, 100, testKey)
	if err != nil {
		t.Fatal(err)
	}
	mf, _ := member.Seal(FamilyElection, 1, 2, nil)
	if _, _, err := b.Open(mf); err != nil {
		t.Fatal(err)
	}
	var last []byte
	for i := 0; i < 3*maxClients; i++ {
		c, err := NewFramer("c", ClientIDBase|node.ID(i), uint64(i+1), testKey)
		if err != nil {
			t.Fatal(err)
		}
		last, _ = c.Seal(FamilyControl, 1, 2, nil)
		if _, _, err := b.Open(last); err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
	}
	b.mu.Lock()
	n, clients := len(b.peers), b.clients
	_, keptMember := b.peers[1]
	b.mu.Unlock()
	if clients != maxClients || n != maxClients+1 || !keptMember {
		t.Fatalf("%d entries, %d of them clients, member kept: %v; want %d clients and the member", n, clients, keptMember, maxClients)
	}
	if _, _, err := b.Open(mf); !errors.Is(err, ErrReplay) {
		t.Fatalf("member frame replayed: %v", err)
	}
	if _, _, err := b.Open(last); !errors.Is(err, ErrReplay) {
		t.Fatalf("latest client's frame replayed: %v", err)
	}
}

// TestStrangersCostNothing: with Only, frames from made-up sender IDs are
// dropped before any state is kept (a million of them once grew a member
// by 96 MB); clients' IDs are still served, within their bound.
func TestStrangersCostNothing(t *testing.T) {
	_, b := pair(t, nil)
	b.Only([]node.ID{1, 2})
	for i := 0; i < 10000; i++ {
		f, _ := NewFramer("c", node.ID(100+i), 1, nil)
		frame, _ := f.Seal(FamilyElection, 1, 2, nil)
		if _, _, err := b.Open(frame); !errors.Is(err, ErrStranger) {
			t.Fatalf("frame from %d: %v", 100+i, err)
		}
	}
	client, _ := NewFramer("c", ClientIDBase+5, 1, nil)
	frame, _ := client.Seal(FamilyControl, 1, 2, nil)
	if _, _, err := b.Open(frame); err != nil {
		t.Fatalf("a client's frame: %v", err)
	}
	if len(b.peers) != 1 || b.Stranger.Load() != 10000 {
		t.Fatalf("state kept for %d senders, %d strangers counted", len(b.peers), b.Stranger.Load())
	}
}

func TestDecID(t *testing.T) {
	var e Enc
	e.Uvarint(1<<32 - 1)
	e.Uvarint(1 << 32)
	d := NewDec(e.B)
	if id := d.ID(); id != 1<<32-1 || d.Err() != nil {
		t.Fatalf("largest id: %d, %v", id, d.Err())
	}
	if d.ID(); d.Err() == nil {
		t.Fatal("an id above 32 bits decoded")
	}
}
