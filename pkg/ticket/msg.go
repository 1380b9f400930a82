package ticket

import (
	"fmt"

	"github.com/roundtable-go/roundtable/pkg/gossip"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// MsgType is a ticket message type. Values are part of the wire protocol:
// append only.
type MsgType uint8

const (
	// MsgCJoin asks a coordinator for a ticket (Algorithm 1, CJOIN).
	// Ticket: the free ticket the joiner would like, or NoTicket.
	MsgCJoin MsgType = 1
	// MsgAckCJoin grants one (Algorithm 1, ACKCJOIN; the seed's message
	// list calls it ACKJOIN): Ticket t, the new successor Succ owning
	// SuccTicket, the pool size N, the coordinator's Cview, and the epochs
	// of the tickets the joiner now coordinates.
	MsgAckCJoin MsgType = 2
	// MsgReject refuses a CJOIN (|S_p| ≤ 1, or the coordinator is not
	// ready: joining, linking, leaving): View tells the joiner whom to ask.
	// It also answers a CLEAVE sent to a process that is not the sender's
	// predecessor (any more): Succ names a closer one to try.
	MsgReject MsgType = 3
	// MsgNewSucc is a new predecessor introducing itself (Algorithm 1,
	// NEWSUCC; used but not listed in the seed).
	MsgNewSucc MsgType = 4
	// MsgAckSucc accepts it (ACKSUCC).
	MsgAckSucc MsgType = 5
	// MsgCLeave is a leaving coordinator handing its range to its
	// predecessor (Algorithm 2, CLEAVE): its successor Succ with
	// SuccTicket, and the epochs of the tickets it coordinated. Attempt is
	// the CJOIN attempt that placed it, naming this incarnation.
	MsgCLeave MsgType = 6
	// MsgAckCLeave lets it go (ACKCLEAVE).
	MsgAckCLeave MsgType = 7

	// §4 (Algorithms 3–5).

	// MsgAlive: the sender is in the core and vouches for the receiver,
	// one of its 2k+1 closest successors, for this round (ALIVE). Ticket
	// is the receiver's, as the sender knows it; Place the sender's own.
	MsgAlive MsgType = 8
	// MsgUpdate proposes the receiver's L: Preds is the sender and its 2k
	// closest predecessors (UPDATE(R)).
	MsgUpdate MsgType = 9
	// MsgAckUpdate is the delivery status the seed assumes of its
	// connection-oriented links, made explicit: Succs is the sender and
	// its 2k closest successors (so that predecessors learn whom to send
	// ALIVE), Floor the highest epoch the sender has heard of.
	MsgAckUpdate MsgType = 10
	// MsgExclude asks the receiver to be the excluder's new successor
	// (EXCLUDE); Attempt numbers the exclusion.
	MsgExclude MsgType = 11
	// MsgAckExclude answers it with the receiver's L in Preds
	// (ACKEXCLUDE(L_q)).
	MsgAckExclude MsgType = 12
	// MsgReqCoord asks a voter to acknowledge the exclusion of every
	// ticket strictly between Ticket (the excluder's) and SuccTicket
	// (the new successor's): REQCOORD(E_pq). Succs are the processes of
	// E_pq the excluder knows, closest first: the voter's ban lasts as
	// long as the excluder's wait, which grows with them (exclude.go).
	MsgReqCoord MsgType = 13
	// MsgAckCoord acknowledges it (ACKCOORD, used but not listed in the
	// seed): the sender stops vouching for E_pq.
	MsgAckCoord MsgType = 14
	// MsgIntro: the sender owns Ticket and counts the receiver among its
	// 2k+1 closest predecessors, but has not had its ALIVE lately. The
	// seed spreads Cview by PrCast for this; a direct word reaches the
	// few processes that need it even when a failed process sits between.
	// With Ticket = NoTicket it answers an ALIVE: "gone", the sender has
	// no such ticket (it left, was excluded, or is a new process).
	MsgIntro MsgType = 15
	// MsgPrCast carries one PrCast gossip message (Gossip) between
	// members' first processes (prcast.go); the Machine never sees it.
	MsgPrCast MsgType = 16
	// MsgProbe asks another member's first process whether any of the
	// member's processes is in the core (a refound, member.go): Attempt
	// is the probe's nonce, Floor the sender's mark, Ticket its flags
	// (probeDurable). With probeOver in Ticket it says instead that the
	// probe of that nonce is given up (abandon): no answer.
	MsgProbe MsgType = 17
	// MsgProbeAnswer answers it: Attempt echoes the nonce, Floor is the
	// answerer's mark, Ticket its flags (probeOut, probeDurable), View the
	// members in its book (Owner.ID; Owner.Ticket unused).
	MsgProbeAnswer MsgType = 18
	// MsgLease asks a member's first process for a lease (Config.Quorum,
	// lease.go): Attempt is the sender's clock when it sent it (Unix ns),
	// Floor its mark.
	MsgLease MsgType = 19
	// MsgLeaseGrant grants it: Attempt echoes the request's, Floor is the
	// granter's mark.
	MsgLeaseGrant MsgType = 20
	// MsgHandL: a leaving process hands its successor the L its own
	// predecessor gave it (Preds; Ticket is the sender's, SuccTicket the
	// receiver's). Once the CLEAVE is served that predecessor is the
	// receiver's, and the list is one of the Rs it sent, so the receiver
	// may take it as its L at once (doc.go, "A hand-back beside a cut").
	MsgHandL MsgType = 21
	// MsgPing: the sender is about to give its ticket back and asks
	// whether the receiver holds Ticket (confirm.go); Attempt is a nonce.
	MsgPing MsgType = 22
	// MsgPong answers it: Attempt echoes the nonce, Ticket is the
	// answerer's.
	MsgPong MsgType = 23
	// MsgFree tells a joiner this coordinator rejected lately that a
	// ticket of its range is free now (a hand-back or a reclaim): Ticket
	// names one. A hint only: the joiner asks with a CJOIN at once instead
	// of after its back-off (hint.go).
	MsgFree MsgType = 24

	// MsgJoin is a local request (From == self): take a ticket.
	MsgJoin MsgType = 64
	// MsgLeave is a local request: give the ticket back and leave the core.
	MsgLeave MsgType = 65
	// MsgAnnounce is a local request of a Member: broadcast Notice by
	// PrCast (the Member stamps it with its member and its now).
	MsgAnnounce MsgType = 66
	// MsgGroup is a local request of a Member: the members PrCast reaches
	// are Group (the member's address book).
	MsgGroup MsgType = 67
	// MsgLocal is a local request of a Member: Local, what the service
	// knows of the member's other processes and clients (refounding).
	MsgLocal MsgType = 68
	// MsgLend is a local request of a Member: lend the owned ticket to a
	// local command, a new use under a new epoch (Machine.Lend). The
	// answer is a LentEvent, or a LendRefusedEvent.
	MsgLend MsgType = 69
	// MsgReturn is a local request of a Member: the command the ticket is
	// lent to is done (ReturnedEvent).
	MsgReturn MsgType = 70
	// MsgLearn is a local request of a Member: another member's mark,
	// Floor, heard by the member's first process (LearnEvent); the mark
	// rises to it (Member.Learn).
	MsgLearn MsgType = 71
	// MsgReset is a local request of a Member: drop a join under way
	// (FreezeEvent on the member's first process; Member.Reset).
	MsgReset MsgType = 72
	// MsgLeased is a local request of a Member's other process (not the
	// first): the member's lease, which its first process holds
	// (Config.Quorum, lease.go), lasts until Attempt (Unix ns on the
	// host's clock; 0: no lease). The process lends, hands out places and
	// stays in the core only under it, as the first process does.
	MsgLeased MsgType = 73
	// MsgAdmit is a local request of a Member's other process (not the
	// first): its member founded the pool, and the promises it founded
	// under last until Attempt (Unix ns on the host's clock); until then
	// the process serves no other member's CJOIN, as the first process
	// does (admit.go).
	MsgAdmit MsgType = 74
)

var typeNames = map[MsgType]string{
	MsgCJoin: "cjoin", MsgAckCJoin: "ackcjoin", MsgReject: "reject", MsgNewSucc: "newsucc",
	MsgAckSucc: "acksucc", MsgCLeave: "cleave", MsgAckCLeave: "ackcleave", MsgAlive: "alive", MsgUpdate: "update",
	MsgAckUpdate: "ackupdate", MsgExclude: "exclude", MsgAckExclude: "ackexclude", MsgReqCoord: "reqcoord",
	MsgAckCoord: "ackcoord", MsgIntro: "intro", MsgPrCast: "prcast", MsgJoin: "join", MsgLeave: "leave",
	MsgAnnounce: "announce", MsgGroup: "group", MsgProbe: "probe", MsgProbeAnswer: "probeanswer", MsgLocal: "local",
	MsgLend: "lend", MsgReturn: "return", MsgLease: "lease", MsgLeaseGrant: "leasegrant", MsgLearn: "learn", MsgReset: "reset",
	MsgLeased: "leased", MsgAdmit: "admit", MsgHandL: "handl", MsgPing: "ping", MsgPong: "pong", MsgFree: "free",
}

func (t MsgType) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// NoTicket is the absent ticket number on the wire.
const NoTicket = ^uint32(0)

// Owner is one entry of a Cview: the process owning Ticket.
type Owner struct {
	Ticket uint32
	ID     node.ID
}

// Epoch is the fencing epoch of one ticket: it grows by one each time the
// ticket is handed out.
type Epoch struct {
	Ticket uint32
	Epoch  uint64
}

// Msg is one ticket message. Which fields matter depends on Type.
type Msg struct {
	Type MsgType
	// Attempt numbers a joiner's CJOINs; ACKCJOIN and REJECT echo it, and
	// a coordinator's answer to one attempt is final (doc.go).
	Attempt    uint64
	Ticket     uint32
	Succ       node.ID
	SuccTicket uint32
	N          uint32
	View       []Owner
	Epochs     []Epoch
	// §4: a list of predecessors (L or R, closest first), of successors
	// (closest first), and the highest epoch the sender has heard of.
	Preds, Succs []Owner
	Floor        uint64
	// Stretch is the sender's local-health factor (1: on time; up to
	// Config.Stretch when its own rounds run late; 0 from a sender that
	// does not say). An ALIVE or UPDATE with it vouches for that many
	// windows, an ACKUPDATE asks its predecessor for that much more
	// patience before it suspects the sender (rounds.go).
	Stretch uint8
	// Stamp is the sender's clock when it sent the message (Unix ns; 0
	// from a sender that does not say). Echo, on ALIVE and UPDATE, is the
	// latest Stamp the sender has had from the receiver: the receiver
	// dates the vouch no earlier than that time on its own clock, which
	// is before the vouch was sent (echo.go). Both travel after Stretch,
	// only when either is set; a frame without them decodes as 0.
	Stamp, Echo uint64
	// Place is the sender's own ticket, on ALIVE (NoTicket: a sender that
	// does not say). The receiver counts the vouch only for the place of
	// its L that names the sender at that ticket: support is kept by (ID,
	// ticket), so a process that lost its place and joined again under
	// the same ID vouches for nothing its old place was in L for (doc.go,
	// "Places are (ID, ticket)"). It travels on ALIVE only, after the
	// stamps (written, as zeros if need be, whenever it is); an ALIVE
	// without it decodes as NoTicket.
	Place uint32
	// Gossip is MsgPrCast's message.
	Gossip *gossip.Msg
	// Notice (MsgAnnounce) and Group (MsgGroup): local requests only.
	Notice *Notice
	Group  []node.ID
	Local  *Local
}

// MaxTickets bounds a pool, so that a view and a range's epochs fit a
// frame (4096 · ~12 bytes).
const MaxTickets = 4096

// MaxList bounds the lists of predecessors and successors (2k+1 each),
// and so k: at most 63.
const MaxList = 127

// maxEpoch bounds epochs on the wire, as node.MaxTerm bounds terms: room
// for 2^62 more hand-outs above anything a peer can claim.
const maxEpoch = 1 << 62

// Codec encodes ticket messages for package wire.
type Codec struct{}

func (Codec) Family() wire.Family { return wire.FamilyTicket }

func onWire(t MsgType) bool { return t >= MsgCJoin && t <= MsgFree }

func (Codec) Marshal(m Msg) (uint8, []byte, error) {
	if !onWire(m.Type) {
		return 0, nil, fmt.Errorf("ticket: %v is not a wire message", m.Type)
	}
	if m.Type == MsgPrCast {
		if m.Gossip == nil {
			return 0, nil, fmt.Errorf("ticket: prcast without a gossip message")
		}
		// One byte of gossip type, then the gossip message as
		// pkg/gossip encodes it.
		typ, body, err := gossip.Codec{}.Marshal(*m.Gossip)
		if err != nil {
			return 0, nil, err
		}
		return uint8(m.Type), append([]byte{typ}, body...), nil
	}
	if len(m.View) > MaxTickets || len(m.Epochs) > MaxTickets || len(m.Preds) > MaxList || len(m.Succs) > MaxList {
		return 0, nil, fmt.Errorf("ticket: %d view entries, %d epochs, %d preds or %d succs exceed the bounds",
			len(m.View), len(m.Epochs), len(m.Preds), len(m.Succs))
	}
	var e wire.Enc
	e.Uvarint(m.Attempt)
	e.Uvarint(uint64(m.Ticket))
	e.Uvarint(uint64(m.Succ))
	e.Uvarint(uint64(m.SuccTicket))
	e.Uvarint(uint64(m.N))
	e.Uvarint(uint64(len(m.View)))
	for _, o := range m.View {
		e.Uvarint(uint64(o.Ticket))
		e.Uvarint(uint64(o.ID))
	}
	e.Uvarint(uint64(len(m.Epochs)))
	for _, ep := range m.Epochs {
		e.Uvarint(uint64(ep.Ticket))
		e.Uvarint(ep.Epoch)
	}
	for _, l := range [][]Owner{m.Preds, m.Succs} {
		e.Uvarint(uint64(len(l)))
		for _, o := range l {
			e.Uvarint(uint64(o.Ticket))
			e.Uvarint(uint64(o.ID))
		}
	}
	e.Uvarint(m.Floor)
	e.U8(m.Stretch)
	place := m.Type == MsgAlive && m.Place != NoTicket
	if m.Stamp != 0 || m.Echo != 0 || place {
		e.Uvarint(m.Stamp)
		e.Uvarint(m.Echo)
	}
	if place {
		e.Uvarint(uint64(m.Place))
	}
	return uint8(m.Type), e.B, nil
}

func (Codec) Unmarshal(typ uint8, p []byte) (Msg, error) {
	m := Msg{Type: MsgType(typ)}
	if !onWire(m.Type) {
		return Msg{}, fmt.Errorf("%w: ticket message type %d", wire.ErrMalformed, typ)
	}
	if m.Type == MsgPrCast {
		if len(p) == 0 {
			return Msg{}, fmt.Errorf("%w: empty prcast", wire.ErrMalformed)
		}
		g, err := gossip.Codec{}.Unmarshal(p[0], p[1:])
		if err != nil {
			return Msg{}, err
		}
		m.Gossip = &g
		return m, nil
	}
	d := wire.NewDec(p)
	m.Attempt = d.Uvarint()
	m.Ticket = d.U32("ticket field")
	m.Succ = d.ID()
	m.SuccTicket = d.U32("ticket field")
	m.N = d.U32("ticket field")
	if n := d.Count(MaxTickets, 2); n > 0 {
		m.View = make([]Owner, n)
		for i := range m.View {
			m.View[i] = Owner{Ticket: d.U32("ticket field"), ID: d.ID()}
		}
	}
	if n := d.Count(MaxTickets, 2); n > 0 {
		m.Epochs = make([]Epoch, n)
		for i := range m.Epochs {
			m.Epochs[i] = Epoch{Ticket: d.U32("ticket field"), Epoch: d.Uvarint()}
		}
	}
	for _, l := range []*[]Owner{&m.Preds, &m.Succs} {
		if n := d.Count(MaxList, 2); n > 0 {
			*l = make([]Owner, n)
			for i := range *l {
				(*l)[i] = Owner{Ticket: d.U32("ticket field"), ID: d.ID()}
			}
		}
	}
	m.Floor = d.Uvarint()
	m.Stretch = d.U8()
	if rest := *d; d.Err() == nil && rest.Done() != nil {
		// Bytes after Stretch: the vouch stamps (absent from older frames).
		m.Stamp = d.Uvarint()
		m.Echo = d.Uvarint()
	}
	if m.Type == MsgAlive {
		// After the stamps: the sender's place (absent from older frames).
		m.Place = NoTicket
		if d.More() {
			m.Place = d.U32("ticket field")
		}
	}
	if err := d.Done(); err != nil {
		return Msg{}, err
	}
	if m.N > MaxTickets {
		return Msg{}, fmt.Errorf("%w: pool of %d tickets above %d", wire.ErrMalformed, m.N, MaxTickets)
	}
	if m.Floor > maxEpoch {
		return Msg{}, fmt.Errorf("%w: epoch floor %d above %d", wire.ErrMalformed, m.Floor, uint64(maxEpoch))
	}
	for _, ep := range m.Epochs {
		if ep.Epoch > maxEpoch {
			return Msg{}, fmt.Errorf("%w: epoch %d above %d", wire.ErrMalformed, ep.Epoch, uint64(maxEpoch))
		}
	}
	return m, nil
}
