package clocksync

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

func TestPacketRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 22, 4, 5, 6, 123456789, time.UTC)
	p := Packet{Leap: LeapNone, Version: 4, Mode: ModeServer, Stratum: 2, Poll: 6, Precision: -20,
		RootDelay: 1500 * time.Microsecond, RootDisp: 250 * time.Microsecond, RefID: [4]byte{127, 0, 0, 1},
		RefTime: now.Add(-time.Minute), Origin: now.Add(-time.Second), Receive: now, Transmit: now.Add(time.Millisecond)}
	got, err := Unmarshal(p.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2]time.Time{"ref": {p.RefTime, got.RefTime}, "origin": {p.Origin, got.Origin},
		"receive": {p.Receive, got.Receive}, "transmit": {p.Transmit, got.Transmit}} {
		if d := pair[1].Sub(pair[0]); d < -time.Nanosecond || d > time.Nanosecond {
			t.Errorf("%s: %v became %v", name, pair[0], pair[1])
		}
	}
	if got.Stratum != 2 || got.Precision != -20 || got.Poll != 6 || got.RefID != p.RefID || got.Mode != ModeServer || got.Version != 4 {
		t.Fatalf("header fields: %+v", got)
	}
	if d := got.RootDelay - p.RootDelay; d < -20*time.Microsecond || d > 20*time.Microsecond {
		t.Fatalf("root delay %v became %v", p.RootDelay, got.RootDelay)
	}
	// Era 1: after the 2036 rollover.
	late := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	if got, _ := Unmarshal(Packet{Version: 4, Transmit: late}.Marshal()); !got.Transmit.Equal(late) {
		t.Fatalf("2040 read back as %v", got.Transmit)
	}
	if _, err := Unmarshal(make([]byte, 47)); err != ErrShort {
		t.Fatal("short packet accepted")
	}
}

func TestReplyAndOffset(t *testing.T) {
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// The server is 40ms ahead; 5ms each way; 1ms handling.
	req := Packet{Version: 4, Mode: ModeClient, Transmit: t1}
	t2 := t1.Add(5*time.Millisecond + 40*time.Millisecond)
	t3 := t2.Add(time.Millisecond)
	rep, ok := Server{Synced: true, Stratum: 1, RefID: [4]byte{'G', 'P', 'S', 0}}.Reply(req, t2, t3)
	if !ok || rep.Mode != ModeServer || !rep.Origin.Equal(t1) || rep.Leap != LeapNone {
		t.Fatalf("reply %+v", rep)
	}
	t4 := t3.Add(-40 * time.Millisecond).Add(5 * time.Millisecond)
	s := Sample{T1: rep.Origin, T2: rep.Receive, T3: rep.Transmit, T4: t4}
	if s.Offset() != 40*time.Millisecond || s.Delay() != 10*time.Millisecond {
		t.Fatalf("θ = %v, δ = %v; want 40ms, 10ms", s.Offset(), s.Delay())
	}
	un, _ := Server{Synced: false}.Reply(req, t2, t3)
	if un.Leap != LeapAlarm || un.Stratum != 16 {
		t.Fatalf("unsynchronised reply: leap %d stratum %d", un.Leap, un.Stratum)
	}
	if _, ok := (Server{}).Reply(Packet{Version: 4, Mode: ModeServer}, t2, t3); ok {
		t.Fatal("answered a server packet")
	}
}

func TestFilterPicksMinimumDelay(t *testing.T) {
	var f Filter
	base := time.Unix(0, 0)
	for i, delay := range []time.Duration{9, 3, 7, 12, 5, 4, 8, 6, 11} {
		// Offsets grow with queueing: the least-delayed sample is the truest.
		t1 := base.Add(time.Duration(i) * time.Second)
		f.Add(Sample{T1: t1, T2: t1.Add(delay * time.Millisecond / 2), T3: t1.Add(delay * time.Millisecond / 2), T4: t1.Add(delay * time.Millisecond)})
	}
	best, _ := f.Best()
	// The first sample (9ms) fell out of the 8-sample window; 3ms is best.
	if best.Delay() != 3*time.Millisecond {
		t.Fatalf("best delay %v, want 3ms", best.Delay())
	}
}

func FuzzUnmarshal(f *testing.F) {
	f.Add(Packet{Version: 4, Mode: ModeClient, Transmit: time.Unix(1e9, 5)}.Marshal())
	f.Add(make([]byte, 48))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Unmarshal(b)
		if err != nil {
			return
		}
		// Re-encoding a decoded header gives back the first 48 bytes,
		// except timestamps that were zero-fraction-only noise: compare
		// the fixed fields.
		out := p.Marshal()
		if !bytes.Equal(out[:16], b[:16]) {
			t.Fatalf("header fields changed: %x -> %x", b[:16], out[:16])
		}
	})
}

func ExampleSample() {
	t1 := time.Unix(100, 0)
	s := Sample{T1: t1, T2: t1.Add(25 * time.Millisecond), T3: t1.Add(26 * time.Millisecond), T4: t1.Add(11 * time.Millisecond)}
	fmt.Println(s.Offset(), s.Delay())
	// Output: 20ms 10ms
}
