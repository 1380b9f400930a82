// Package ticketd is the ticket pool service around pkg/ticket: the
// daemon that runs one member's machine and serves local clients on a
// Unix control socket, and the clients that talk to it (run, hold,
// status).
//
// One member is one process of the paper's core at a time: when a local
// client asks for a ticket and the member owns none, it joins the core
// (CJOIN); the ticket it gets is lent to one local client after another,
// each time with a new epoch (ticket.MsgLend to its ticket.Member, which
// reports the epoch in a LentEvent). An idle member keeps
// its ticket, so the next local take costs no round trip, but gives it
// back (CLEAVE) when another member says it is waiting for one and none
// is free; a member that has lent its ticket at least once gives it back
// at the end of the current use, so a busy member cannot starve the
// others.
//
// The control socket speaks JSON lines. A client sends requests:
//
//	{"op":"take","nonblock":false}
//	{"op":"release"}
//	{"op":"status"}
//	{"op":"forget","member":3}
//
// and receives replies: taken (ticket, tickets, epoch, until_ns,
// kill_grace_ns), valid (until_ns), lost (reason), busy, unavailable,
// status, forgotten (member, addr) and error. A connection is one client: when it closes, what it
// holds is released and what it waits for is forgotten.
package ticketd

import (
	"encoding/json"
	"fmt"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// Tool is the program's name, in messages and environment variables.
const Tool = "ticketd"

// Request is one line a client sends.
type Request struct {
	Op       string `json:"op"`
	NonBlock bool   `json:"nonblock,omitempty"`
	Member   uint32 `json:"member,omitempty"` // forget's
}

// Reply is one line the daemon sends. until_ns and kill_grace_ns are for
// the client's lease only.
type Reply struct {
	Event       string          `json:"event"`
	Ticket      uint32          `json:"ticket"`
	Tickets     uint32          `json:"tickets,omitempty"`
	Epoch       uint64          `json:"epoch,omitempty"`
	UntilNS     int64           `json:"until_ns,omitempty"`
	KillGraceNS int64           `json:"kill_grace_ns,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	Error       string          `json:"error,omitempty"`
	Status      json.RawMessage `json:"status,omitempty"`
	Member      uint32          `json:"member,omitempty"` // forgotten's
	Addr        string          `json:"addr,omitempty"`   // forgotten's: where the book had it
}

func (r Reply) String() string {
	switch r.Event {
	case "taken", "released":
		return fmt.Sprintf("%s %d epoch %d of %d", r.Event, r.Ticket, r.Epoch, r.Tickets)
	case "lost":
		return fmt.Sprintf("lost %d epoch %d (%s)", r.Ticket, r.Epoch, r.Reason)
	case "forgotten":
		return fmt.Sprintf("forgotten %d at %s", r.Member, r.Addr)
	case "busy":
		return "busy"
	case "unavailable":
		return "unavailable (" + r.Reason + ")"
	case "error":
		return "error " + r.Error
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// Print writes r to out as users see it: a text line, or a JSON line
// without the lease's internals.
func Print(out *cli.Output, r Reply) {
	r.UntilNS, r.KillGraceNS = 0, 0
	out.Value(r.String(), r)
}
