package mutex

import (
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestCentralLateGrantRenewedAtOnce: a grant that reaches the member half
// a lease after the request it answers was sent (the coordinator was
// starved, the answer queued) brings only 0.4 of a lease (rule 2 counts
// 0.9·L from the send). The member renews it at once, and the lock stays
// held; a first renewal counted from the grant's arrival (an eighth of a
// lease later) would leave a client that checks its lease on its own
// clock, with the daemon's word an eighth of a lease apart, holding a
// lock whose lease is nearly out.
func TestCentralLateGrantRenewedAtOnce(t *testing.T) {
	const lease = time.Second
	w := newBench(t, Central, 3, lease)
	w.advance(2*lease, 5*time.Millisecond) // 3 coordinates, takeover over
	var grants []node.Envelope[Msg]
	w.drop = func(env node.Envelope[Msg]) bool {
		if env.To == 2 && env.Msg.Type == MsgGrant {
			grants = append(grants, env)
			return true
		}
		return false
	}
	sent := w.now
	w.local(2, LocalAcquire, 1, "x")
	w.advance(lease/2, time.Millisecond)
	if len(grants) == 0 {
		t.Fatal("the coordinator did not grant")
	}
	var renewedAt time.Time
	w.onReady = func(id node.ID, rd node.Ready[Msg]) {
		for _, env := range rd.Msgs {
			if env.From == 2 && env.Msg.Type == MsgRenew && renewedAt.IsZero() {
				for _, rec := range env.Msg.Locks {
					if rec.Name == "x" {
						renewedAt = w.now
					}
				}
			}
		}
	}
	w.drop = nil
	arrived := w.now
	w.queue = append(w.queue, grants[0]) // the answer to the first send
	w.settle()
	if !w.grant["2/1/x"] {
		t.Fatal("the late grant was not taken")
	}
	w.advance(lease/32, time.Millisecond)
	if renewedAt.IsZero() {
		t.Fatalf("granted %v after the request was sent, with %v left: no renewal within %v of the grant",
			arrived.Sub(sent), sent.Add(time.Duration(safety*float64(lease))).Sub(arrived), lease/32)
	}
	// And it stays held (the bench fails on a lost lock) for two leases.
	w.advance(2*lease, time.Millisecond)
	if hs := w.ms[2].(*central).Holdings(w.now); len(hs) != 1 || hs[0].Until.Sub(w.now) < lease/2 {
		t.Fatalf("holdings after two leases: %+v", hs)
	}
}
