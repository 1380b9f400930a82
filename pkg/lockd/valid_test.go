package lockd

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mutex"
)

// heldSession is a session holding hs, each lock granted at granted with
// a lease until its own end.
func heldSession(hs []mutex.Holding, granted time.Time) *session {
	s := &session{holding: map[string]*held{}, late: cli.NewLease(time.Time{})}
	for _, h := range hs {
		s.holding[h.Name] = &held{token: h.Token, lease: NewLease(Reply{Event: "acquired", Name: h.Name, Token: h.Token,
			AtNS: granted.UnixNano(), UntilNS: granted.Add(time.Second).UnixNano()})}
	}
	return s
}

// TestValidEachLockOwnEnd: one lock whose renewal lags ends at its own
// lease's end on the member, and the others are extended to theirs, in a
// session (thousands of locks) and in run's single-lock lease alike. A
// "valid" reply that carried the earliest end for every lock (as it once
// did) would cut the others short to the laggard's end.
func TestValidEachLockOwnEnd(t *testing.T) {
	const lease = 4 * time.Second
	now := time.Now()
	var hs []mutex.Holding
	for i := 0; i < 1000; i++ {
		hs = append(hs, mutex.Holding{Name: fmt.Sprintf("L%04d", i), Client: 1, Token: uint64(i + 1),
			Until: now.Add(3*time.Second + time.Duration(i)*time.Millisecond)})
	}
	lagging := now.Add(300 * time.Millisecond)
	hs[500].Until = lagging
	r := validReply(hs, now, lease)
	if len(r.Each) != 1 || r.Each[0].Name != "L0500" || r.Each[0].UntilNS != lagging.UnixNano() {
		t.Fatalf("each = %+v, want only L0500 until its own end", r.Each)
	}
	if r.UntilNS != now.Add(3*time.Second).UnixNano() {
		t.Fatalf("until_ns = %v after now, want the earliest on-time end, 3s", time.Unix(0, r.UntilNS).Sub(now))
	}
	// Through the wire, as the client reads it.
	b, _ := json.Marshal(r)
	var got Reply
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	s := heldSession(hs, now.Add(-time.Second))
	s.reply(got)
	for _, h := range hs {
		u := s.holding[h.Name].lease.Until()
		if u.After(h.Until) {
			t.Fatalf("%s extended to %v, past its own end %v", h.Name, u.Sub(now), h.Until.Sub(now))
		}
		if h.Name != "L0500" && u.Before(now.Add(3*time.Second)) {
			t.Fatalf("%s cut short to %v by another lock's late renewal", h.Name, u.Sub(now))
		}
	}
	if u := s.holding["L0500"].lease.Until(); !u.Equal(lagging) {
		t.Fatalf("the lagging lock ends at %v, want its own end %v", u.Sub(now), lagging.Sub(now))
	}
	if !s.floor.Equal(lagging) {
		t.Fatalf("floor %v, want the lagging lock's end", s.floor.Sub(now))
	}
	// lockd run's lease of one lock reads the same line.
	for _, name := range []string{"L0500", "L0001"} {
		l := NewLease(Reply{Event: "acquired", Name: name, AtNS: now.Add(-time.Second).UnixNano(), UntilNS: now.UnixNano()})
		l.Extend(got)
		want := now.Add(3 * time.Second)
		if name == "L0500" {
			want = lagging
		}
		if !l.Until().Equal(want) {
			t.Fatalf("run's lease of %s ends %v after now, want %v", name, l.Until().Sub(now), want.Sub(now))
		}
	}
}

// TestValidNeverPastOwnEnd: whatever the holdings, no lock is extended
// past its own lease's end on the member (the safety of the reply), and
// while at most maxEach lag every on-time lock keeps at least half a
// lease.
func TestValidNeverPastOwnEnd(t *testing.T) {
	const lease = time.Second
	now := time.Now()
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(300)
		lagFrac := rng.Float64()
		var hs []mutex.Holding
		lag := 0
		for i := 0; i < n; i++ {
			d := lease/2 + time.Duration(rng.Int64N(int64(lease/2)))
			if rng.Float64() < lagFrac {
				d = time.Duration(1 + rng.Int64N(int64(lease/2)-1))
				lag++
			}
			hs = append(hs, mutex.Holding{Name: fmt.Sprintf("n%d", i), Client: 1, Until: now.Add(d)})
		}
		r := validReply(hs, now, lease)
		if len(r.Each) > maxEach {
			t.Fatalf("seed %d: %d locks listed, at most %d", seed, len(r.Each), maxEach)
		}
		for _, h := range hs {
			l := NewLease(Reply{Event: "acquired", Name: h.Name, AtNS: now.Add(-time.Millisecond).UnixNano(), UntilNS: now.UnixNano()})
			l.Extend(r)
			if l.Until().After(h.Until) {
				t.Fatalf("seed %d: %s extended %v past its own end", seed, h.Name, l.Until().Sub(h.Until))
			}
			if lag <= maxEach && !l.Until().Equal(h.Until) && l.Until().Before(now.Add(lease/2)) {
				t.Fatalf("seed %d: %s (own end %v) extended only to %v", seed, h.Name, h.Until.Sub(now), l.Until().Sub(now))
			}
		}
	}
}

// TestGrantCountsFromDaemonClock: a lock counts as held from the
// daemon's grant (at_ns), so a "valid" the daemon sent after the grant
// extends it even when the client reads the grant later than that (it
// was slow, or starved). A lock granted after the daemon looked is not
// extended by that look.
func TestGrantCountsFromDaemonClock(t *testing.T) {
	now := time.Now()
	grant := Reply{Event: "acquired", Name: "x", AtNS: now.Add(-200 * time.Millisecond).UnixNano(), UntilNS: now.Add(100 * time.Millisecond).UnixNano()}
	l := NewLease(grant)
	l.Extend(Reply{Event: "valid", AtNS: now.Add(-100 * time.Millisecond).UnixNano(), UntilNS: now.Add(time.Second).UnixNano()})
	if !l.Until().Equal(now.Add(time.Second)) {
		t.Fatalf("a valid sent after the grant did not extend it: ends %v after now", l.Until().Sub(now))
	}
	l = NewLease(grant)
	l.Extend(Reply{Event: "valid", AtNS: now.Add(-300 * time.Millisecond).UnixNano(), UntilNS: now.Add(time.Second).UnixNano()})
	if !l.Until().Equal(now.Add(100 * time.Millisecond)) {
		t.Fatalf("a valid from before the grant extended it: ends %v after now", l.Until().Sub(now))
	}
}
