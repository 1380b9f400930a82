package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// resentPerMessage floods a settled group of n members (each hands its
// member 16 messages every millisecond for 50 ms) over loss-free links
// of latency lag, and reports the copies resent (retransmitted) per
// message once every member has delivered every message.
func resentPerMessage(t *testing.T, n int, cfg Config, lag time.Duration) float64 {
	t.Helper()
	ids := make([]node.ID, n)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	cfg.StartWith = n
	s, delivered := countingGroup(t, ids, cfg)
	if err := s.RunFor(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	s.SetLatency(lag, lag)
	resent := func() (k uint64) {
		for _, id := range ids {
			k += s.Machine(id).(*Group).stats["retransmitted"]
		}
		return k
	}
	resent0, delivered0, sent := resent(), *delivered, 0
	for at := time.Duration(0); at < 50*time.Millisecond; at += time.Millisecond {
		for _, id := range ids {
			items := make([]mcast.Item, 16)
			for k := range items {
				items[k].Payload = []byte(fmt.Sprintf("%d-%d-%d", id, at, k))
			}
			r := s.Stats.Rejected
			s.Inject(id, Msg{Type: MsgSend, Items: items})
			if s.Stats.Rejected == r {
				sent += len(items)
			}
		}
		if err := s.RunFor(time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5000 && *delivered < delivered0+n*sent; i++ {
		if err := s.RunFor(time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if *delivered != delivered0+n*sent {
		t.Fatalf("%v: %d deliveries, want %d", cfg.Total, *delivered-delivered0, n*sent)
	}
	return float64(resent()-resent0) / float64(sent)
}

// TestLamportAcksResendOnce: Lamport's acknowledgements are statuses, one
// per batch (ctrlBatch) from every member to every member. On links of
// 25 ms (more than half a Period, so a status shows missing what is
// still on its way) a status makes its receiver resend to its sender at
// most once per Period, as heartbeats alone would: a 9-member flood
// resends no more than twice what the sequencer's, whose statuses are
// only heartbeats, resends (8.2 and 9.3 copies per message). When every
// acknowledgement resent what it showed missing (the planted
// bugResendEach) it resent 321 copies per message here, and real
// 9-member Lamport floods on loopback ran at a third of the rate
// (16,233 against 49,904 msgs/s, one run after the other).
func TestLamportAcksResendOnce(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator flood: run without -race")
	}
	const lag = 25 * time.Millisecond
	beats := resentPerMessage(t, 9, Config{Total: TotalSequencer}, lag)
	t.Logf("sequencer: %.2f copies resent per message", beats)
	for _, c := range []struct {
		bug  bug
		fail bool
	}{{0, false}, {bugResendEach, true}} {
		r := resentPerMessage(t, 9, Config{Total: TotalLamport, bug: c.bug}, lag)
		t.Logf("lamport, bug %d: %.2f copies resent per message", c.bug, r)
		if over := r > 2*beats; over != c.fail {
			t.Errorf("lamport, bug %d: %.2f copies resent per message, the sequencer's %.2f (want over twice that: %v)", c.bug, r, beats, c.fail)
		}
	}
}
