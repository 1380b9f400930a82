package mutex

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// TestTokenRingBackupCost counts the token ring's messages per emission
// for k = 0..3 backups on a saturated ring of seven, against
// Arantes–Sopena §III ("k additional messages per emission": SafeSendToken
// sends the token to the next k+1 successors). Every copy is also
// acknowledged (channels here lose and duplicate messages, which the paper
// assumes they do not; see ring.go), so an emission costs k+1 tokens and
// k+1 acknowledgements on a loss-free network; the heartbeats of the
// failure detector (every lease/4, to all) are reported apart, per second.
func TestTokenRingBackupCost(t *testing.T) {
	ids := []node.ID{1, 2, 3, 4, 5, 6, 7}
	for k := 0; k <= 3; k++ {
		backups := k
		if k == 0 {
			backups = -1 // Config.Backups: negative is none, zero the default
		}
		s := sim.New[Msg](sim.Options{Seed: 1, MinLatency: time.Millisecond, MaxLatency: time.Millisecond}, Codec{},
			func(id node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
				m, err := New(Config{ID: id, Peers: ids, Algo: TokenRing, Lease: 10 * time.Second, Rand: rng,
					Boot: uint64(inc) + 1, Backups: backups, RingHold: -1})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}, ids...)
		grants := 0
		s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
			if e, ok := ev.(GrantEvent); ok {
				grants++
				s.Inject(id, Msg{Type: LocalRelease, Name: "x", Client: e.Client})
				s.Inject(id, Msg{Type: LocalAcquire, Name: "x", Client: e.Client})
			}
			return nil
		}
		if err := s.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			s.Inject(id, Msg{Type: LocalAcquire, Name: "x", Client: 9})
		}
		if err := s.RunFor(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		count := func(typ MsgType) int { return s.Stats.Delivered[uint8(typ)] }
		tok, ack, alive, g0 := count(MsgTRToken), count(MsgTRAck), count(MsgTRAlive), grants
		if err := s.RunFor(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		emissions := float64(grants - g0) // saturated: one entry per emission
		perTok := float64(count(MsgTRToken)-tok) / emissions
		perAck := float64(count(MsgTRAck)-ack) / emissions
		t.Logf("k=%d: %.3f tokens and %.3f acknowledgements per emission (the paper: %d tokens, no acknowledgement); %d heartbeats per second in all",
			k, perTok, perAck, k+1, (count(MsgTRAlive)-alive)/2)
		if perTok < float64(k+1)*0.99 || perTok > float64(k+1)*1.01 {
			t.Errorf("k=%d: %.3f token messages per emission, want k+1 = %d", k, perTok, k+1)
		}
		if perAck > float64(k+1)*1.01 {
			t.Errorf("k=%d: %.3f acknowledgements per emission, want at most one per copy", k, perAck)
		}
	}
}
