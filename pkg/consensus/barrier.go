package consensus

import (
	"fmt"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// The start barrier: without a shared start time, processes announce
// themselves (Msg.Hello) until they may start round 1 together. Why it is
// there and what it can promise is in doc.go.

// need is how many peers must have been heard for the run to start
// without the rest: n−f processes, this one included, and never fewer
// than a majority, so that the processes left out cannot start a second
// run of their own (doc.go).
func (m *Machine) need() int {
	n := len(m.cfg.Peers)
	return max(n-m.cfg.F, n/2+1) - 1
}

// barrier runs the start barrier's timers at now.
func (m *Machine) barrier(now time.Time) {
	if m.started || m.done {
		return
	}
	if m.t0.IsZero() {
		m.t0 = now
	}
	if !m.waited && !now.Before(m.t0.Add(m.cfg.Wait)) {
		m.waited = true
		m.nextHello = time.Time{} // tell the others at once
	}
	if m.mayStart() {
		m.begin(now, 1)
		return
	}
	if !now.Before(m.t0.Add(m.cfg.Timeout)) {
		if len(m.hello) >= m.need() {
			m.begin(now, 1)
			return
		}
		m.done = true
		var silent []node.ID
		for _, p := range m.others {
			if !m.hello[p] {
				silent = append(silent, p)
			}
		}
		slices.Sort(silent)
		m.events = append(m.events, UndecidedEvent{Event: "undecided", Missed: silent, F: m.cfg.F,
			Reason: fmt.Sprintf("heard from %d of %d peers in %v, fewer than the %d needed to start without the rest (n−f processes and a majority, this one included)",
				len(m.hello), len(m.others), m.cfg.Timeout, m.need())})
		return
	}
	if !now.Before(m.nextHello) {
		m.sendHello(m.others...)
		m.nextHello = now.Add(m.cfg.Round)
	}
}

// mayStart: every peer has been heard from, or n−f processes (this one
// included) have each waited Wait and would start without the rest.
func (m *Machine) mayStart() bool {
	if len(m.hello) == len(m.others) {
		return true
	}
	return m.waited && len(m.ready) >= m.need()
}

// heardHello records a peer's announcement.
func (m *Machine) heardHello(now time.Time, from node.ID, ready bool) {
	if m.started || m.done || !m.cfg.Start.IsZero() {
		return // too late to matter, or a shared start time instead
	}
	if m.t0.IsZero() {
		m.t0 = now
	}
	first := !m.hello[from]
	m.hello[from] = true
	if ready {
		m.ready[from] = true
	}
	if first {
		m.sendHello(from) // a newcomer hears from us at once
	}
	m.barrier(now)
}

func (m *Machine) sendHello(to ...node.ID) {
	if m.cfg.Byzantine == Silent {
		return
	}
	for _, p := range to {
		m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: p, Msg: Msg{Hello: true, Ready: m.waited}})
	}
}

// barrierWake is when the barrier next needs Tick.
func (m *Machine) barrierWake() time.Time {
	if m.t0.IsZero() {
		return time.Unix(0, 1) // at the first Tick
	}
	w := m.t0.Add(m.cfg.Timeout)
	if !m.waited {
		w = minTime(w, m.t0.Add(m.cfg.Wait))
	}
	if !m.nextHello.IsZero() {
		w = minTime(w, m.nextHello)
	}
	return w
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// missedIDs lists, sorted, the peers not heard in some round.
func (m *Machine) missedIDs() []node.ID {
	var out []node.ID
	for p := range m.missed {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
