package ticket

import (
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Echoed vouches (doc.go, "Busy hosts: echoed vouches"). Every message a
// process sends in §4 carries its own clock (Msg.Stamp); every ALIVE and
// UPDATE carries back the latest stamp its sender has had from its
// receiver (Msg.Echo). The receiver dates the vouch no earlier than that
// echo: a time on its own clock at which it was running, before which
// the vouch cannot have been sent, however long either side was stalled
// and whatever the links' delay. A lease counts from its request's
// sending the same way (lease.go; Gray and Cheriton, SOSP 1989).

// noteStamp keeps the latest stamp heard from a peer (the highest: a
// datagram overtaken by a later one does not move it back).
func (m *Machine) noteStamp(from node.ID, stamp uint64) {
	if stamp == 0 || from == m.cfg.ID || !m.cfg.FaultTolerant {
		return
	}
	if m.echo == nil {
		m.echo = map[node.ID]uint64{}
	}
	m.echo[from] = max(m.echo[from], stamp)
}

// stamp fills in a §4 message's Stamp and, on a vouch, its Echo.
func (m *Machine) stamp(to node.ID, msg *Msg) {
	if !m.cfg.FaultTolerant || m.now.IsZero() {
		return
	}
	msg.Stamp = uint64(m.now.UnixNano())
	if m.health.born.IsZero() {
		m.health.born = m.now
	}
	switch msg.Type {
	case MsgAlive, MsgUpdate:
		msg.Echo = m.echo[to]
		if f := int(msg.Stretch); f > 0 && f < len(m.health.granted) {
			m.health.granted[f] = m.now
		}
	case MsgAckCoord:
		// The longest this voter may have vouched for E_pq: the
		// excluder waits it out (rounds.go, waitFor). Without a Grant
		// above Stretch the wait counts Stretch whatever is reported.
		if m.grant() > m.stretch() {
			msg.Stretch = max(msg.Stretch, uint8(m.grantedMax(m.now)))
		}
	}
}

// echoAt is the time an ALIVE or UPDATE read at now with the given echo
// counts from on the strength of its echo: the echoed stamp, which this
// process sent before the vouch was sent. An echo from this process's
// future (its clock was set back since, or a garbled frame) counts for
// nothing; zero time means no echo to go by.
func (m *Machine) echoAt(now time.Time, echo uint64) time.Time {
	if echo == 0 || m.cfg.bug == bugEchoIgnored || echo > uint64(now.UnixNano()) {
		return time.Time{}
	}
	if m.cfg.bug == bugEchoAtReading {
		return now // planted: "it echoes a stamp of mine, so it is current"
	}
	return time.Unix(0, int64(echo)).In(now.Location())
}

// pruneEcho forgets the stamps of processes this one no longer sends
// ALIVE or UPDATE to (called once a round, so the map stays within the
// successors it knows).
func (m *Machine) pruneEcho() {
	for id := range m.echo {
		if _, ok := m.known[id]; ok || id == m.succ {
			continue
		}
		if _, ok := m.former[id]; ok {
			continue
		}
		delete(m.echo, id)
	}
}

// bugEchoIgnored: vouches are dated as before echoes (held.go alone), so
// after a run of late rounds every vouch is dated at the last instant the
// process ran on time and its support lapses although its predecessors
// vouch for it all along. Tests only: TestSimEchoKeepsSupportThroughStalls.
const bugEchoIgnored bug = 131

// bugEchoAtReading: a vouch that echoes a stamp is taken as current and
// dated at its reading. After a stall the ALIVEs a voter sent before its
// ban echo a stamp from before the stall: read late, they would carry
// support past the excluder's wait (Theorem 4.1). Tests only.
const bugEchoAtReading bug = 132
