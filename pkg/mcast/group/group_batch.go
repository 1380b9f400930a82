package group

import (
	"time"
)

// ctrlBatch is how close together a member sends its order frames: the
// sequencer's stamps (MsgOrder), the acknowledgements of Lamport's order
// and of safe delivery (MsgStatus), ISIS's proposals and agreed priorities
// (MsgPrio, MsgFinal). The first after a quiet spell goes at once; those
// that follow within ctrlBatch of it wait until ctrlBatch after it and
// go together, one frame per member for all of them. Sent as each data
// frame came, they cost the sequencer n−1 frames for every data frame it
// received (at nine members sending 1,000 messages a second each, 64,000
// frames a second from one process, which on a shared host is what kept
// it, and the group, behind), and Lamport's acknowledgements (n−1)² per
// message. Batched, they cost n−1 frames per ctrlBatch and member at
// most, whatever the load, and a message waits at most ctrlBatch more.
const ctrlBatch = time.Millisecond

// batchState is what a member has to send in its next batch of order
// frames.
type batchState struct {
	last time.Time // when the last batch went
	due  bool      // something waits for the next batch
	ack  bool      // an acknowledgement (a status to every member)
}

// ctrl notes that order frames wait (stamps, an acknowledgement, ISIS's
// priorities) and sends them now if the last batch is ctrlBatch old.
func (g *Group) ctrl() {
	if g.cfg.bug != bugNoBatch && !g.batch.last.IsZero() && g.now.Sub(g.batch.last) < ctrlBatch {
		g.batch.due = true
		return
	}
	g.sendCtrl()
}

// sendCtrl sends every order frame waiting.
func (g *Group) sendCtrl() {
	g.batch.due = false
	g.batch.last = g.now
	if !g.inView || g.done {
		return
	}
	g.order.sendBatch(func() {
		if g.batch.ack {
			g.batch.ack = false
			for _, id := range g.others() {
				g.sendStatus(id)
			}
		}
	})
}

// batchWake is when the waiting batch is due (zero: none waits).
func (g *Group) batchWake() time.Time {
	if !g.batch.due {
		return time.Time{}
	}
	return g.batch.last.Add(ctrlBatch)
}

// batchTick sends the waiting batch if it is due; it reports whether the
// tick came for that alone (before the regular one), so that nothing
// else runs: a tick that comes early must not count as one on time.
func (g *Group) batchTick(now time.Time) bool {
	if w := g.batchWake(); !w.IsZero() && !now.Before(w) {
		g.sendCtrl()
		return now.Before(g.tickAt)
	}
	return false
}

// batchReset starts a view with nothing waiting: what did not go is a
// lost frame's worth, which the view change has settled.
func (g *Group) batchReset() {
	g.batch = batchState{last: g.batch.last}
}
