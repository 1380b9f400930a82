package group

import (
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// MsgType is a message type of the group (views) protocol. Values are part
// of the wire protocol, disjoint from MsgType's: append only.
type MsgType uint8

const (
	// MsgData carries multicast messages of one view (own or relayed).
	MsgData MsgType = 16
	// MsgOrder carries the sequencer's stamps of one view: Stamps[i] is the
	// message at total-order position Start+i.
	MsgOrder MsgType = 17
	// MsgStatus is the heartbeat of a view member: per member of the view
	// (in view order) how many of its messages it has received without a
	// gap, and how many stamps. It drives failure detection,
	// retransmission, garbage collection and flushing. In Lamport total
	// order it is also the acknowledgement every receiver multicasts
	// (Tanenbaum ch. 6, §6.3.1), with its Lamport clock. One that asks
	// (Reject) for a gap names the addressee's messages it lacks in
	// Stamps (askGap).
	MsgStatus MsgType = 18
	// MsgJoin asks to join the group as Member (sent to any member, which
	// forwards it to the leader).
	MsgJoin MsgType = 19
	// MsgLeave asks the leader to take Member out of the group.
	MsgLeave MsgType = 20
	// MsgPropose opens a view change out of View (phase I, Nita-Rotaru's CS7610 notes): stop
	// sending and delivering, and answer with what you have.
	MsgPropose MsgType = 21
	// MsgAck answers MsgPropose: Recv and Ordered as in MsgStatus, and the
	// change this member has accepted for View, if any (Accepted). Reject:
	// the member has promised a higher Ballot.
	MsgAck MsgType = 22
	// MsgCommit fixes the change (phase II): the next view and the cut, the
	// messages of View every survivor delivers before installing it.
	MsgCommit MsgType = 23
	// MsgReady: the member has every message up to the committed cut.
	MsgReady MsgType = 24
	// MsgInstall: every survivor is ready; install Change.Next.
	MsgInstall MsgType = 25
	// MsgGone tells a member of an older view that it is no longer in the
	// group (View is the sender's view): it must rejoin as a new member.
	// Member names the incarnation whose frame it answers; a receiver
	// running another (later) incarnation ignores it. Zero (a sender
	// from before the field): whichever incarnation receives it.
	MsgGone MsgType = 26
	// MsgPrio (ISIS total order): the sender's proposed priorities for
	// messages it received, sent to their senders (Prios; By unused).
	MsgPrio MsgType = 27
	// MsgFinal (ISIS total order): agreed priorities, Prios[i] for message
	// (Sender, Seq); sent by each message's sender, relayed by anyone.
	MsgFinal MsgType = 28
	// MsgToken (TOTEM total order): the token of the view's ring, passed to
	// the next member in view order (Token).
	MsgToken MsgType = 29
	// MsgMerge (extended virtual synchrony): a view's leader probes the
	// processes it knows outside its view; View and Member are its view
	// and itself. Two components that hear each other merge (group_evs.go).
	MsgMerge MsgType = 30
	// MsgQuit: the sender stops now, without waiting for a view change
	// (its reader stalled past --stall-timeout). View and Member are its
	// view and itself, Ballot the highest it had promised in View (zero:
	// none). It never answers again, so the others take it out at once;
	// one that had promised nothing in View, or that quit in an earlier
	// view, cannot be in any change's majority and is left out of the
	// count (tryCommit).
	MsgQuit MsgType = 31
	// MsgHoldCancel (TOTEM total order): the sender has a message queued
	// while the ring is idle, so the view's leader may be holding the
	// token: the leader passes it on at once (group_totem.go; corosync's
	// token hold cancel). View is the sender's view.
	MsgHoldCancel MsgType = 32

	// maxWire is the highest MsgType sent on the wire.
	maxWire = MsgHoldCancel

	// MsgSend and MsgEnd are local requests (From == self): multicast the
	// payloads of Items; the input has ended (leave the group).
	MsgSend MsgType = 64
	MsgEnd  MsgType = 65
	// MsgWritten is a local request: the runner has written out deliveries
	// of Written cost in all (see Config.Backlog).
	MsgWritten MsgType = 66
	// MsgAbandon is a local request: send MsgQuit to the view and stop at
	// once (the member's process is about to exit).
	MsgAbandon MsgType = 67
)

var gtypeNames = map[MsgType]string{MsgData: "data", MsgOrder: "order", MsgStatus: "status", MsgJoin: "join", MsgLeave: "leave",
	MsgPropose: "propose", MsgAck: "ack", MsgCommit: "commit", MsgReady: "ready", MsgInstall: "install", MsgGone: "gone",
	MsgPrio: "prio", MsgFinal: "final", MsgToken: "token", MsgMerge: "merge", MsgQuit: "quit", MsgHoldCancel: "hold-cancel",
	MsgSend: "send", MsgEnd: "end", MsgWritten: "written", MsgAbandon: "abandon"}

func (t MsgType) String() string {
	if s, ok := gtypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("gtype(%d)", uint8(t))
}

// Member is one incarnation of a process in a view: a process that
// restarts, or that finds itself removed, joins again under a new Inc.
type Member struct {
	ID  node.ID `json:"id"`
	Inc uint64  `json:"inc"`
}

// View is a membership view: Members in seniority order (Members[0]
// leads), and what changed from the view before.
type View struct {
	ID      uint64
	Members []Member
	Joined  []Member
	Left    []Member
}

// Ballot orders competing view changes out of one view (a leader's
// attempt number, then its ID).
type Ballot struct {
	N  uint64
	ID node.ID
}

func (b Ballot) less(c Ballot) bool { return b.N < c.N || b.N == c.N && b.ID < c.ID }

// Change is the outcome of a view change out of one view: the next view,
// the members of the old view that flushed (Survivors, leavers included),
// and the cut: per member of the old view (in its order) how many of its
// messages are delivered in the old view, and how many stamps (total
// order) count.
type Change struct {
	Next      View
	Survivors []node.ID
	Cut       []uint64
	OrderCut  uint64
	FinalCut  []uint64 // ISIS: per member of the old view, how many of its messages have agreed priorities that count
	// Into (extended virtual synchrony): the members leave the view
	// together to join the component led by this process (Next has no
	// members). Merged: Next takes in members of another component.
	Into   node.ID
	Merged bool
}

// Prio is an ISIS priority: a number, ties broken by the proposer's ID
// (every proposer's numbers grow, so two messages never share one).
type Prio struct {
	N  uint64
	By node.ID
}

func (p Prio) less(q Prio) bool { return p.N < q.N || p.N == q.N && p.By < q.By }

// PrioItem is one message's priority in a MsgPrio or MsgFinal frame.
type PrioItem struct {
	Sender node.ID
	Seq    uint64
	Prio   Prio
}

// Stamp names one message of a view in the sequencer's order.
type Stamp struct {
	Sender node.ID
	Seq    uint64
}

// Msg is one frame of the group protocol; which fields count depends on
// Type.
type Msg struct {
	Type    MsgType
	View    uint64 // the view the frame belongs to (the view being left, for a change)
	Inc     uint64 // the sender's incarnation
	Ballot  Ballot
	Items   []mcast.Item // data (VT unused)
	Start   uint64       // order: position of Stamps[0]
	Stamps  []Stamp      // order; status that asks: the messages asked for (askGap)
	Recv    []uint64     // status, ack
	Ordered uint64       // status, ack
	Member  Member       // join, leave, merge, gone (its addressee)
	// Reject: ack: the member promised a higher Ballot; join: the joiner
	// comes from another component (a merge); status: the sender asks for
	// what it shows missing at once (it saw a gap, or must fetch a cut).
	Reject   bool
	Change   *Change // ack (accepted), commit, install
	Accepted Ballot  // ack: the ballot of Change
	// Clock (status, Lamport total order): the sender's Lamport time; its
	// later messages carry larger times, and its own messages up to
	// Recv[its position] carry at most this one.
	Clock uint64
	// Finals (status, ack; ISIS): per member of the view, how many of its
	// messages' agreed priorities the sender holds without a gap.
	Finals []uint64
	Prios  []PrioItem // prio, final
	Token  *Token     // token
	// Written (MsgWritten, local only): the cost of the deliveries the
	// runner has written out so far.
	Written uint64
	// Lead: the leader (Members[0]) of View, on every frame a member sends
	// in its view: a view is its number and its leader, and two EVS
	// components may number views alike (doc.go, "views numbered
	// alike"). Zero: not given (a sender from before the field).
	Lead Member
}

// Token is TOTEM's token (Nita-Rotaru's CS7610 notes, "TOTEM: single ring"): Rot counts its
// passes (a copy with a Rot already seen is a duplicate); Seq is the last
// position of the view's order given out; Arus holds, per member of the
// view (in view order), how far that member had received everything
// when it last held the token (TOTEM's aru and aru_id, kept per member:
// the minimum is the aru); Rtr lists positions some member lacks (the
// retransmission requests).
type Token struct {
	Rot  uint64
	Seq  uint64
	Arus []uint64
	Rtr  []uint64
}

// Codec encodes group messages for package wire.
type Codec struct{}

func (Codec) Family() wire.Family { return wire.FamilyMcast }

func putMembers(e *wire.Enc, ms []Member) {
	e.Uvarint(uint64(len(ms)))
	for _, m := range ms {
		e.Uvarint(uint64(m.ID))
		e.Uvarint(m.Inc)
	}
}

func putVec(e *wire.Enc, v []uint64) {
	e.Uvarint(uint64(len(v)))
	for _, x := range v {
		e.Uvarint(x)
	}
}

func (Codec) Marshal(m Msg) (uint8, []byte, error) {
	if m.Type < MsgData || m.Type > maxWire {
		return 0, nil, fmt.Errorf("mcast: %v is not a wire message", m.Type)
	}
	if len(m.Items) > maxItems || len(m.Stamps) > maxStamps || len(m.Recv) > maxMembers {
		return 0, nil, fmt.Errorf("mcast: message too large")
	}
	// Sized once for what the frame carries (a data frame of a flood
	// holds up to FrameBudget of payload): grown by appending, its
	// buffer was reallocated and copied over and over on the way.
	size := 96 + 10*(len(m.Recv)+len(m.Finals)) + 20*len(m.Stamps) + 40*len(m.Prios)
	for _, it := range m.Items {
		size += len(it.Payload) + 32
	}
	e := wire.Enc{B: make([]byte, 0, size)}
	e.Uvarint(m.View)
	e.Uvarint(m.Inc)
	e.Uvarint(m.Ballot.N)
	e.Uvarint(uint64(m.Ballot.ID))
	e.Uvarint(uint64(len(m.Items)))
	for _, it := range m.Items {
		if len(it.Payload) > mcast.MaxPayload {
			return 0, nil, fmt.Errorf("mcast: item too large")
		}
		e.Uvarint(uint64(it.Sender))
		e.Uvarint(it.Seq)
		e.Uvarint(it.TS)
		e.Bytes(it.Payload)
	}
	e.Uvarint(m.Start)
	e.Uvarint(uint64(len(m.Stamps)))
	for _, s := range m.Stamps {
		e.Uvarint(uint64(s.Sender))
		e.Uvarint(s.Seq)
	}
	putVec(&e, m.Recv)
	e.Uvarint(m.Ordered)
	e.Uvarint(uint64(m.Member.ID))
	e.Uvarint(m.Member.Inc)
	e.Bool(m.Reject)
	e.Bool(m.Change != nil)
	if c := m.Change; c != nil {
		if len(c.Next.Members) > maxMembers || len(c.Next.Joined) > maxMembers || len(c.Next.Left) > maxMembers ||
			len(c.Survivors) > maxMembers || len(c.Cut) > maxMembers {
			return 0, nil, fmt.Errorf("mcast: change too large")
		}
		e.Uvarint(c.Next.ID)
		putMembers(&e, c.Next.Members)
		putMembers(&e, c.Next.Joined)
		putMembers(&e, c.Next.Left)
		e.Uvarint(uint64(len(c.Survivors)))
		for _, id := range c.Survivors {
			e.Uvarint(uint64(id))
		}
		putVec(&e, c.Cut)
		e.Uvarint(c.OrderCut)
		putVec(&e, c.FinalCut)
		e.Uvarint(uint64(c.Into))
		e.Bool(c.Merged)
	}
	e.Uvarint(m.Accepted.N)
	e.Uvarint(uint64(m.Accepted.ID))
	e.Uvarint(m.Clock)
	putVec(&e, m.Finals)
	if len(m.Prios) > maxStamps || len(m.Finals) > maxMembers || m.Change != nil && len(m.Change.FinalCut) > maxMembers {
		return 0, nil, fmt.Errorf("mcast: message too large")
	}
	e.Uvarint(uint64(len(m.Prios)))
	for _, p := range m.Prios {
		e.Uvarint(uint64(p.Sender))
		e.Uvarint(p.Seq)
		e.Uvarint(p.Prio.N)
		e.Uvarint(uint64(p.Prio.By))
	}
	e.Bool(m.Token != nil)
	if t := m.Token; t != nil {
		if len(t.Arus) > maxMembers || len(t.Rtr) > maxStamps {
			return 0, nil, fmt.Errorf("mcast: token too large")
		}
		e.Uvarint(t.Rot)
		e.Uvarint(t.Seq)
		putVec(&e, t.Arus)
		putVec(&e, t.Rtr)
	}
	if m.Lead != (Member{}) {
		e.Uvarint(uint64(m.Lead.ID))
		e.Uvarint(m.Lead.Inc)
	}
	return uint8(m.Type), e.B, nil
}

// maxStamps bounds the stamps of one order frame.
const maxStamps = 8192

func (Codec) Unmarshal(typ uint8, p []byte) (Msg, error) {
	m := Msg{Type: MsgType(typ)}
	if m.Type < MsgData || m.Type > maxWire {
		return Msg{}, fmt.Errorf("%w: group message type %d", wire.ErrMalformed, typ)
	}
	d := wire.NewDec(p)
	u := func() uint64 {
		v := d.Uvarint()
		if v > maxSeq {
			d.Fail("number out of range")
		}
		return v
	}
	m.View, m.Inc = u(), d.Uvarint()
	m.Ballot = Ballot{u(), d.ID()}
	if n := d.Count(maxItems, 4); n > 0 {
		m.Items = make([]mcast.Item, n)
		for i := range m.Items {
			m.Items[i] = mcast.Item{Sender: d.ID(), Seq: u(), TS: u(), Payload: d.Bytes(mcast.MaxPayload)}
			if m.Items[i].Sender == node.None || m.Items[i].Seq == 0 {
				d.Fail("item")
			}
		}
	}
	m.Start = u()
	if n := d.Count(maxStamps, 2); n > 0 {
		m.Stamps = make([]Stamp, n)
		for i := range m.Stamps {
			m.Stamps[i] = Stamp{d.ID(), u()}
			if m.Stamps[i].Sender == node.None || m.Stamps[i].Seq == 0 {
				d.Fail("stamp")
			}
		}
	}
	vec := func() []uint64 {
		var out []uint64
		if k := d.Count(maxMembers, 1); k > 0 {
			out = make([]uint64, k)
			for j := range out {
				out[j] = u()
			}
		}
		return out
	}
	members := func() []Member {
		var out []Member
		if k := d.Count(maxMembers, 2); k > 0 {
			out = make([]Member, k)
			for j := range out {
				out[j] = Member{d.ID(), d.Uvarint()}
				if out[j].ID == node.None {
					d.Fail("member")
				}
			}
		}
		return out
	}
	m.Recv = vec()
	m.Ordered = u()
	m.Member = Member{d.ID(), d.Uvarint()}
	m.Reject = d.Bool()
	if d.Bool() {
		c := &Change{}
		c.Next.ID = u()
		c.Next.Members, c.Next.Joined, c.Next.Left = members(), members(), members()
		if k := d.Count(maxMembers, 1); k > 0 {
			c.Survivors = make([]node.ID, k)
			for j := range c.Survivors {
				c.Survivors[j] = d.ID()
			}
		}
		c.Cut = vec()
		c.OrderCut = u()
		c.FinalCut = vec()
		if into := d.Uvarint(); into <= uint64(^uint32(0)) {
			c.Into = node.ID(into)
		} else {
			d.Fail("process id")
		}
		c.Merged = d.Bool()
		m.Change = c
	}
	m.Accepted = Ballot{u(), d.ID()}
	m.Clock = u()
	m.Finals = vec()
	if n := d.Count(maxStamps, 4); n > 0 {
		m.Prios = make([]PrioItem, n)
		for i := range m.Prios {
			m.Prios[i] = PrioItem{Sender: d.ID(), Seq: u(), Prio: Prio{u(), d.ID()}}
			if m.Prios[i].Sender == node.None || m.Prios[i].Seq == 0 {
				d.Fail("priority")
			}
		}
	}
	if d.Bool() {
		t := &Token{Rot: u(), Seq: u(), Arus: vec()}
		if k := d.Count(maxStamps, 1); k > 0 {
			t.Rtr = make([]uint64, k)
			for j := range t.Rtr {
				t.Rtr[j] = u()
			}
		}
		m.Token = t
	}
	if d.More() {
		m.Lead = Member{d.ID(), d.Uvarint()}
	}
	if err := d.Done(); err != nil {
		return Msg{}, err
	}
	return m, nil
}
