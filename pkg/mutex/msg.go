package mutex

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/election"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// MsgType is a lockd message type. Types below 32 are the embedded
// election's (coordinator failover); values are part of the wire protocol:
// append only.
type MsgType uint8

const (
	MsgElection MsgType = 0 // carries an election.Msg (its own type byte goes on the wire)

	MsgPing     MsgType = 32 // coordinator → all: "I coordinate term T", ping Seq, lock table summary
	MsgVouch    MsgType = 33 // follower → coordinator: answers ping Seq; a promise not to vouch for another for one lease
	MsgCollect  MsgType = 34 // new coordinator → all: report your held and waiting locks
	MsgReport   MsgType = 35 // → coordinator: Locks held (Token set) and waited for
	MsgAcquire  MsgType = 36 // → coordinator: Name for Client; resent every lease/4 while waiting
	MsgGrant    MsgType = 37 // → requester: Name is yours with Token (Seq: which Acquire copy was answered)
	MsgBusy     MsgType = 38 // → requester: Name is held and the request was non-blocking
	MsgRenew    MsgType = 39 // holder → coordinator: extend the leases of Locks (each: Token, and in Attempt which renewal)
	MsgRenewAck MsgType = 40 // → holder: the leases of Locks extended (Attempt echoed)
	MsgRelease  MsgType = 41 // → coordinator: done with Token, or no longer waiting
	MsgRevoked  MsgType = 42 // → holder: the coordinator does not know this grant any more

	// Ricart–Agrawala.
	MsgRARequest MsgType = 43 // → all: may I enter Name? (Term: Lamport timestamp, Attempt: request id)
	MsgRAOK      MsgType = 44 // → requester: yes
	MsgRADeny    MsgType = 45 // → requester: not yet; an OK follows (the seed's always-reply fix)
	MsgRAAlive   MsgType = 46 // → all, periodically: failure detection; Term: the sender's Lamport clock

	// Token ring (Arantes–Sopena).
	MsgTRToken MsgType = 47 // → next k+1 live successors: Term count, Members the recipients (S_T first) with boot numbers, Locks the table
	MsgTRAck   MsgType = 48 // → token sender: copy Term received
	MsgTRAlive MsgType = 49 // → all, periodically: Term count, Seq boot number, Token copy held (0 none, 1 backup, 2 real)

	// Decentralised voting (Lin et al.).
	MsgVRequest MsgType = 50 // → m coordinators: your vote for Name (Attempt), Token: highest counter known
	MsgVGrant   MsgType = 51 // → requester: my vote, Token: its stamp
	MsgVDeny    MsgType = 52 // → requester: no (voted for another, restarting, or the vote is gone)
	MsgVConfirm MsgType = 53 // → the quorum: entering (or renewing) with Token; Seq: which round
	MsgVAck     MsgType = 54 // → holder: vote kept for another lease (Seq echoed)
	MsgVRelease MsgType = 55 // → coordinators: give the vote back
	MsgVAlive   MsgType = 56 // → all, periodically: failure detection

	// Central again.
	MsgUnavailable MsgType = 57 // → requester: a non-blocking request cannot be decided now (takeover, no majority)

	// MsgVFree → the longest-waiting requester a coordinator denied: the
	// vote for Name is free now; ask again without waiting out the backoff.
	MsgVFree MsgType = 58

	// Central: one renewal for every lock a member holds (doc.go, rule 4).
	MsgSession    MsgType = 59 // member → coordinator: renew my session; Seq, Client: how many locks it covers, Attempt: their digest
	MsgSessionAck MsgType = 60 // → member: Seq echoed; Client, Attempt: the coordinator's count and digest of the member's session

	msgLast = MsgSessionAck

	// Local requests (From == self), never on the wire.
	LocalAcquire MsgType = 64
	LocalRelease MsgType = 65
)

var msgNames = map[MsgType]string{MsgPing: "ping", MsgVouch: "vouch", MsgCollect: "collect", MsgReport: "report",
	MsgAcquire: "acquire", MsgGrant: "grant", MsgBusy: "busy", MsgRenew: "renew", MsgRenewAck: "renew-ack",
	MsgRelease: "release", MsgRevoked: "revoked", MsgRARequest: "ra-request", MsgRAOK: "ra-ok",
	MsgRADeny: "ra-deny", MsgRAAlive: "ra-alive", MsgTRToken: "tr-token", MsgTRAck: "tr-ack", MsgTRAlive: "tr-alive",
	MsgVRequest: "v-request", MsgVGrant: "v-grant", MsgVDeny: "v-deny", MsgVConfirm: "v-confirm", MsgVAck: "v-ack",
	MsgVRelease: "v-release", MsgVAlive: "v-alive", MsgUnavailable: "unavailable", MsgVFree: "v-free",
	MsgSession: "session", MsgSessionAck: "session-ack",
	LocalAcquire: "local-acquire", LocalRelease: "local-release"}

func (t MsgType) String() string {
	if s, ok := msgNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// LockRec describes one lock in reports and table summaries.
type LockRec struct {
	Name    string
	Node    node.ID
	Client  uint64
	Token   uint64 // 0: waiting
	Attempt uint64
}

// Msg is one lockd message.
type Msg struct {
	Type     MsgType
	Elect    election.Msg // MsgElection only
	Term     uint64
	Seq      uint64
	Name     string
	Client   uint64
	Token    uint64
	NonBlock bool
	Attempt  uint64 // Acquire/Grant: which acquisition of Name by Client (grows per daemon)
	Locks    []LockRec
	Members  []Member // token ring: the copy's recipients, S_T first
}

// Member is a daemon and its boot number (token ring).
type Member struct {
	ID   node.ID
	Boot uint64
}

const (
	maxName  = 255
	maxLocks = 512
	// maxMembers bounds a token's recipient list (k+1 ≤ n).
	maxMembers = 1024
)

// listBudget bounds the bytes of lock records one message carries, well
// inside a frame (wire.MaxFrame, 60 KiB) with room for the header, the
// seal and the other fields.
const listBudget = 32 * 1024

// fit is how many of recs, from the first, one message carries: at most
// maxLocks, within listBudget bytes (at least one).
func fit(recs []LockRec, budget int) int {
	size := 0
	for i, r := range recs {
		size += len(r.Name) + 4*binary.MaxVarintLen64
		if i == maxLocks || i > 0 && size > budget {
			return i
		}
	}
	return len(recs)
}

// Codec encodes lockd messages.
type Codec struct{}

func (Codec) Family() wire.Family { return wire.FamilyMutex }

func (Codec) Marshal(m Msg) (uint8, []byte, error) {
	if m.Type == MsgElection {
		return election.Codec{}.Marshal(m.Elect)
	}
	if m.Type < MsgPing || m.Type > msgLast {
		return 0, nil, fmt.Errorf("mutex: %v is not a wire message", m.Type)
	}
	if len(m.Name) > maxName || len(m.Locks) > maxLocks || len(m.Members) > maxMembers {
		return 0, nil, fmt.Errorf("mutex: name or lock list too long")
	}
	var e wire.Enc
	e.Uvarint(m.Term)
	e.Uvarint(m.Seq)
	e.Bytes([]byte(m.Name))
	e.Uvarint(m.Client)
	e.Uvarint(m.Token)
	e.Bool(m.NonBlock)
	e.Uvarint(m.Attempt)
	e.Uvarint(uint64(len(m.Locks)))
	for _, l := range m.Locks {
		if len(l.Name) > maxName {
			return 0, nil, fmt.Errorf("mutex: lock name too long")
		}
		e.Bytes([]byte(l.Name))
		e.Uvarint(uint64(l.Node))
		e.Uvarint(l.Client)
		e.Uvarint(l.Token)
		e.Uvarint(l.Attempt)
	}
	e.Uvarint(uint64(len(m.Members)))
	for _, mb := range m.Members {
		e.Uvarint(uint64(mb.ID))
		e.Uvarint(mb.Boot)
	}
	return uint8(m.Type), e.B, nil
}

func (Codec) Unmarshal(typ uint8, p []byte) (Msg, error) {
	if typ < uint8(MsgPing) {
		em, err := election.Codec{}.Unmarshal(typ, p)
		return Msg{Type: MsgElection, Elect: em}, err
	}
	m := Msg{Type: MsgType(typ)}
	if m.Type > msgLast {
		return Msg{}, fmt.Errorf("%w: lockd message type %d", wire.ErrMalformed, typ)
	}
	d := wire.NewDec(p)
	m.Term = d.Uvarint()
	m.Seq = d.Uvarint()
	m.Name = string(d.Bytes(maxName))
	m.Client = d.Uvarint()
	m.Token = d.Uvarint()
	m.NonBlock = d.Bool()
	m.Attempt = d.Uvarint()
	if n := d.Count(maxLocks, 4); n > 0 {
		m.Locks = make([]LockRec, 0, n)
		for i := 0; i < n && d.Err() == nil; i++ {
			l := LockRec{Name: string(d.Bytes(maxName))}
			l.Node, l.Client, l.Token, l.Attempt = d.ID(), d.Uvarint(), d.Uvarint(), d.Uvarint()
			m.Locks = append(m.Locks, l)
		}
	}
	if n := d.Count(maxMembers, 2); n > 0 {
		m.Members = make([]Member, 0, n)
		for i := 0; i < n && d.Err() == nil; i++ {
			m.Members = append(m.Members, Member{ID: d.ID(), Boot: d.Uvarint()})
		}
	}
	if err := d.Done(); err != nil {
		return Msg{}, err
	}
	if err := bounded(m); err != nil {
		return Msg{}, err
	}
	return m, nil
}

// Bounds on the numbers a message may carry, so that no fencing number
// built from them can wrap, whatever a peer or a forged frame claims:
// coordinator terms and Lamport times stay within node.MaxTerm (tokens are
// term<<32 | counter and time<<32 | ID); the token ring's count, which
// grows with every pass, within maxCount; every token within maxToken.
const (
	maxCount = 1 << 62
	maxToken = 1 << 63
)

func bounded(m Msg) error {
	limit := uint64(node.MaxTerm)
	if m.Type >= MsgTRToken && m.Type <= MsgTRAlive {
		limit = maxCount
	}
	if m.Type >= MsgVRequest && m.Type <= MsgVAlive {
		limit = maxToken // voting's Term is unused; its counters travel as Token
	}
	if m.Term > limit || m.Token > maxToken {
		return fmt.Errorf("%w: %v carries term %d or token %d beyond their bounds", wire.ErrMalformed, m.Type, m.Term, m.Token)
	}
	for _, l := range m.Locks {
		if l.Token > maxToken {
			return fmt.Errorf("%w: %v carries a lock token %d beyond its bound", wire.ErrMalformed, m.Type, l.Token)
		}
	}
	return nil
}

// admit checks a local acquire against the name's queue of local clients
// (its head holds the name or has the daemon's request out), the same for
// every algorithm without a coordinator: a valid name, a client not already
// queued, and a non-blocking request only when nobody here holds or waits
// (else it is answered busy, as an event, and not admitted).
func admit[W any](msg Msg, queue []W, client func(W) uint64, events *[]node.Event) (bool, error) {
	if msg.Name == "" || len(msg.Name) > maxName {
		return false, fmt.Errorf("mutex: lock name must be 1 to %d bytes", maxName)
	}
	if slices.ContainsFunc(queue, func(w W) bool { return client(w) == msg.Client }) {
		return false, fmt.Errorf("mutex: client %d already holds or waits for %q", msg.Client, msg.Name)
	}
	if msg.NonBlock && len(queue) > 0 {
		*events = append(*events, BusyEvent{Event: "busy", Name: msg.Name, Client: msg.Client})
		return false, nil
	}
	return true, nil
}
