package ticket

import (
	"encoding/json"
	"fmt"
)

// PrCast (Gidenstam et al. §2): the members tell each other who took, released
// and reclaimed which ticket through pkg/gossip's push-pull broadcast,
// which a Member runs beside its Machine and steps with the same now, its
// messages going out as MsgPrCast through Ready like every other.
// Delivery is with high probability, in no order; it is for people and
// scripts watching the pool (`ticketd watch`), never for safety, which
// rests on the Machine alone.

// Notice is one PrCast event: "taken T by M epoch E" (a member lent
// ticket T to a local command under epoch E), "released T by M epoch E"
// (the command is done), "excluded T..U by M" (member M's core process
// excluded failed processes and reclaimed tickets T down to U), "lost T
// by M epoch E" (the command was stopped: its member lost the ticket),
// "refounded 0..N−1 by M epoch E" (the pool had ended and member M
// founded it again, its epochs starting above E).
type Notice struct {
	Event   string `json:"event"`
	Ticket  uint32 `json:"ticket"`
	Through uint32 `json:"through,omitempty"` // excluded: the last ticket of the range
	By      uint32 `json:"by"`                // the member
	Epoch   uint64 `json:"epoch,omitempty"`
	AtNS    int64  `json:"at_ns"` // the member's clock when it happened
}

func (n Notice) String() string {
	switch n.Event {
	case "excluded":
		return fmt.Sprintf("excluded %d..%d by %d", n.Ticket, n.Through, n.By)
	case "refounded":
		return fmt.Sprintf("refounded %d..%d by %d epoch %d", n.Ticket, n.Through, n.By, n.Epoch)
	default:
		return fmt.Sprintf("%s %d by %d epoch %d", n.Event, n.Ticket, n.By, n.Epoch)
	}
}

// NoticeEvent: a PrCast notice, this member's own as it announces it or
// another member's as it arrives. Own is true for this member's own.
type NoticeEvent struct {
	Notice
	Own bool `json:"-"`
}

func (e NoticeEvent) Kind() string { return "notice" }

func decodeNotice(b []byte) (Notice, bool) {
	var n Notice
	return n, json.Unmarshal(b, &n) == nil && n.Event != ""
}
