package clocksync

import (
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestBerkeleyIgnoresStaleReading: a reading that answers an earlier poll
// (it took longer than the collection window) is no reading of the
// current one: the master's estimate of a clock is its reading plus half
// the round trip of the poll it answers (Cristian), so a reading matched
// to the wrong poll is off by the time between the polls. The random
// runs' links are faster than half an interval, so none arrives that late
// there. Here every clock is right; member 2's answer to poll 1 comes
// during poll 2 and its answer to poll 2 is lost: the master must average
// 1 and 3 and send 2 no correction, rather than tell it to move by about
// an interval.
func TestBerkeleyIgnoresStaleReading(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b, err := NewBerkeley(BerkeleyConfig{ID: 1, Peers: []node.ID{1, 2, 3}, Master: 1, Epoch: t0})
	if err != nil {
		t.Fatal(err)
	}
	b.Tick(t0) // poll 1
	b.Ready()
	reading := func(from node.ID, seq uint64, at time.Time) {
		if err := b.Step(at, node.Envelope[BerkeleyMsg]{From: from, To: 1, Msg: BerkeleyMsg{Type: BerkeleyReading, Seq: seq, Time: at.Add(-5 * time.Millisecond)}}); err != nil {
			t.Fatal(err)
		}
	}
	b.Tick(t0.Add(b.cfg.Interval / 2)) // poll 1's window closes unanswered
	p2 := t0.Add(b.cfg.Interval)
	b.Tick(p2) // poll 2
	b.Ready()
	// 2's answer to poll 1, read when poll 1 reached it, arrives now.
	if err := b.Step(p2.Add(10*time.Millisecond), node.Envelope[BerkeleyMsg]{From: 2, To: 1, Msg: BerkeleyMsg{Type: BerkeleyReading, Seq: 1, Time: t0.Add(5 * time.Millisecond)}}); err != nil {
		t.Fatal(err)
	}
	reading(3, 2, p2.Add(10*time.Millisecond))
	b.Tick(p2.Add(b.cfg.Interval / 2))
	for _, env := range b.Ready().Msgs {
		if env.Msg.Type == BerkeleyAdjust && (env.Msg.Delta > 50*time.Millisecond || env.Msg.Delta < -50*time.Millisecond) {
			t.Fatalf("master tells %d to move its clock by %v, every clock being right", env.To, env.Msg.Delta)
		}
	}
}
