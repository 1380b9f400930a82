package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

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
	beats := floodFrames(t, 9, Config{Total: TotalSequencer}, load{batch: 16, dur: 50 * time.Millisecond, lag: lag}).resent
	t.Logf("sequencer: %.2f copies resent per message", beats)
	for _, c := range []struct {
		bug  bug
		fail bool
	}{{0, false}, {bugResendEach, true}} {
		r := floodFrames(t, 9, Config{Total: TotalLamport, bug: c.bug}, load{batch: 16, dur: 50 * time.Millisecond, lag: lag}).resent
		t.Logf("lamport, bug %d: %.2f copies resent per message", c.bug, r)
		if over := r > 2*beats; over != c.fail {
			t.Errorf("lamport, bug %d: %.2f copies resent per message, the sequencer's %.2f (want over twice that: %v)", c.bug, r, beats, c.fail)
		}
	}
}

// TestISISResendsOwnFinals: outside view changes a status that lacks
// agreed priorities, and does not ask, gets from each member only those
// of that member's own messages (their sender holds them all), not every
// sender's from every member: three members sent 5 messages each and
// all are agreed; member 3, shown a status that lacks them all, resends
// its own 5. The planted bugRelayFinals resends all 15, as every member
// did: in 9-member ISIS floods on loopback, the same agreed priorities
// from 8 members to each one that lagged, a sixth of a member's CPU.
func TestISISResendsOwnFinals(t *testing.T) {
	for _, c := range []struct {
		bug  bug
		want uint64
	}{{0, 5}, {bugRelayFinals, 15}} {
		ids := []node.ID{1, 2, 3}
		s, delivered := countingGroup(t, ids, Config{Total: TotalISIS, StartWith: 3, bug: c.bug})
		if err := s.RunFor(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			items := make([]mcast.Item, 5)
			for k := range items {
				items[k].Payload = []byte(fmt.Sprintf("%d-%d", id, k))
			}
			s.Inject(id, Msg{Type: MsgSend, Items: items})
		}
		d0 := *delivered
		if err := s.RunFor(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if *delivered-d0 != 45 {
			t.Fatalf("%d deliveries, want 45", *delivered-d0)
		}
		g := s.Machine(3).(*Group)
		if g.flushing || !g.inView {
			t.Fatal("member 3 is not settled in its view")
		}
		k0 := g.stats["retransmitted"]
		g.order.(*isisOrder).retransmit(1, make([]uint64, 3), false)
		if got := g.stats["retransmitted"] - k0; got != c.want {
			t.Errorf("bug %d: %d agreed priorities resent, want %d", c.bug, got, c.want)
		}
	}
}

// TestReorderResendsLittle: on links that reorder (each frame 1 to 25 ms
// on its way, no loss), a 9-member flood resends few copies of each
// message. A frame that overtakes another shows its receiver a gap, and
// the receiver asks the sender (askGap); the ask names the messages
// missing, asks for each again only Period/2 later, and its sender
// answers with those of its own messages only. With the planted
// bugAskResendsAll every gap asked at once and every ask was answered
// with everything the asker lacked from every sender: 265 to 445 copies
// per message here (14, 10 and 24 with the rules).
func TestReorderResendsLittle(t *testing.T) {
	if raceOn {
		t.Skip("single-goroutine simulator flood: run without -race")
	}
	const most = 50.0
	for _, tot := range []Total{TotalSequencer, TotalLamport, TotalISIS} {
		for _, b := range []bug{0, bugAskResendsAll} {
			r := floodFrames(t, 9, Config{Total: tot, bug: b}, load{batch: 4, dur: 50 * time.Millisecond, minLag: time.Millisecond, lag: 25 * time.Millisecond}).resent
			t.Logf("%v, bug %d: %.2f copies resent per message over 1–25 ms links", tot, b, r)
			if over := r > most; over != (b != 0) {
				t.Errorf("%v, bug %d: %.2f copies resent per message (want over %.0f: %v)", tot, b, r, most, b != 0)
			}
		}
	}
}
