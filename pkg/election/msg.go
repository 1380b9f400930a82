package election

import (
	"fmt"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// MsgType is an election message type. Values are part of the wire
// protocol: append only.
type MsgType uint8

const (
	// MsgHeartbeat is the leader's periodic "I am alive, term T".
	MsgHeartbeat MsgType = 1
	// MsgElection opens an election. Bully: sent to every higher-priority
	// peer. Ring: circulates, collecting members. Chang–Roberts: carries the
	// best candidate seen so far.
	MsgElection MsgType = 2
	// MsgAnswer is bully's reply to an election: a higher process is alive
	// and takes over (Schaffernicht, Topic V "reply", Tanenbaum ch. 6 "take-over").
	MsgAnswer MsgType = 3
	// MsgCoordinator announces the winner and its term (bully "bully"/
	// victory message, ring COORDINATOR/LEADER, Chang–Roberts meCoordinator).
	MsgCoordinator MsgType = 4
	// MsgAck acknowledges one hop of a ring message.
	MsgAck MsgType = 5
	// MsgStale tells a leader that a higher term exists.
	MsgStale MsgType = 6
	// MsgResign is a leader giving up before it exits.
	MsgResign MsgType = 7
	// MsgCampaign is a local request (From == self): start an election now.
	MsgCampaign MsgType = 8
	// MsgRetire is a local request: resign if leading, then stop taking part.
	MsgRetire MsgType = 9
	// MsgNewTerm is a local request: a leader gives up its term and
	// campaigns for a higher one (its user ran out of numbers in this
	// term: lockd's fencing tokens are term<<32 | counter).
	MsgNewTerm MsgType = 11
	// MsgLeaseAck acknowledges heartbeat Round of term Term and promises
	// the leader Stretch·Lease (doc.go "Leases").
	MsgLeaseAck MsgType = 10
	// MsgClaim is a Chang–Roberts claim with backups (backup.go): the
	// sender emits it to its k+1 next members; Members[0] is the
	// candidate, Members[1:] the receivers, the first of which holds the
	// claim next; Count numbers the emission.
	MsgClaim MsgType = 12
	// MsgProbe asks a monitored predecessor to show it is alive; it
	// answers with an Ack of MsgProbe (backup.go).
	MsgProbe MsgType = 13
)

var typeNames = map[MsgType]string{
	MsgHeartbeat: "heartbeat", MsgElection: "election", MsgAnswer: "answer",
	MsgCoordinator: "coordinator", MsgAck: "ack", MsgStale: "stale", MsgResign: "resign",
	MsgCampaign: "campaign", MsgRetire: "retire", MsgLeaseAck: "lease-ack", MsgNewTerm: "new-term",
	MsgClaim: "claim", MsgProbe: "probe",
}

// onWire reports whether t travels between processes.
func onWire(t MsgType) bool {
	return t >= MsgHeartbeat && t <= MsgResign || t == MsgLeaseAck || t == MsgClaim || t == MsgProbe
}

func (t MsgType) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Member is a process and its election priority.
type Member struct {
	ID   node.ID
	Prio uint64
}

// Msg is one election message. Which fields matter depends on Type.
type Msg struct {
	Type   MsgType
	Term   uint64  // Heartbeat/Coordinator: the leader's term; otherwise the sender's highest known term
	Prio   uint64  // the sender's priority
	Leader node.ID // Heartbeat/Coordinator: the leader; Chang–Roberts Election: the candidate
	Origin node.ID // ring messages: the process that started this circulation
	Round  uint64  // ring messages: the origin's circulation number; Heartbeat, LeaseAck: the heartbeat's number
	Of     MsgType // Ack: which message type is acknowledged
	// Stretch: Heartbeat, the lease multiple the leader asks its
	// followers to promise; LeaseAck, the multiple promised (doc.go
	// "Local health"). 0 means 1. It travels in Of's byte, which these
	// types do not use, so that a peer that predates it reads 0.
	Stretch uint8
	// Members: ring Election, the live members collected so far; ring
	// Coordinator, the new ring. Chang–Roberts Election: one entry, the
	// candidate with its priority.
	Members []Member
	// Count: Claim, the emission number of the claim (backup.go).
	Count uint64
}

// stretches reports whether messages of type t carry Stretch.
func stretches(t MsgType) bool { return t == MsgHeartbeat || t == MsgLeaseAck }

// maxMembers bounds member lists on the wire.
const maxMembers = 4096

// Codec encodes election messages for package wire.
type Codec struct{}

func (Codec) Family() wire.Family { return wire.FamilyElection }

func (Codec) Marshal(m Msg) (uint8, []byte, error) {
	if !onWire(m.Type) {
		return 0, nil, fmt.Errorf("election: %v is not a wire message", m.Type)
	}
	if len(m.Members) > maxMembers {
		return 0, nil, fmt.Errorf("election: %d members exceeds %d", len(m.Members), maxMembers)
	}
	var e wire.Enc
	e.Uvarint(m.Term)
	e.Uvarint(m.Prio)
	e.Uvarint(uint64(m.Leader))
	e.Uvarint(uint64(m.Origin))
	e.Uvarint(m.Round)
	if stretches(m.Type) {
		e.U8(m.Stretch)
	} else {
		e.U8(uint8(m.Of))
	}
	e.Uvarint(uint64(len(m.Members)))
	for _, mb := range m.Members {
		e.Uvarint(uint64(mb.ID))
		e.Uvarint(mb.Prio)
	}
	if m.Type == MsgClaim {
		e.Uvarint(m.Count)
	}
	return uint8(m.Type), e.B, nil
}

func (Codec) Unmarshal(typ uint8, p []byte) (Msg, error) {
	m := Msg{Type: MsgType(typ)}
	if !onWire(m.Type) {
		return Msg{}, fmt.Errorf("%w: election message type %d", wire.ErrMalformed, typ)
	}
	d := wire.NewDec(p)
	m.Term = d.Uvarint()
	m.Prio = d.Uvarint()
	m.Leader = d.ID()
	m.Origin = d.ID()
	m.Round = d.Uvarint()
	if of := d.U8(); stretches(m.Type) {
		m.Stretch = of
	} else {
		m.Of = MsgType(of)
	}
	if n := d.Count(maxMembers, 2); n > 0 {
		m.Members = make([]Member, n)
		for i := range m.Members {
			m.Members[i] = Member{ID: d.ID(), Prio: d.Uvarint()}
		}
	}
	if m.Type == MsgClaim {
		m.Count = d.Uvarint()
	}
	if err := d.Done(); err != nil {
		return Msg{}, err
	}
	if m.Term > node.MaxTerm {
		return Msg{}, fmt.Errorf("%w: election term %d above %d", wire.ErrMalformed, m.Term, uint64(node.MaxTerm))
	}
	return m, nil
}
