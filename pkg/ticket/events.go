package ticket

import (
	"fmt"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TakenEvent: this process owns Ticket of a pool of N and may act on it;
// Epoch grows by one each time the ticket is handed out (a fencing
// number). Text form: "taken 3 epoch 7 of 8".
type TakenEvent struct {
	Event  string `json:"event"` // "taken"
	Ticket uint32 `json:"ticket"`
	Epoch  uint64 `json:"epoch"`
	N      uint32 `json:"tickets"`
}

func (e TakenEvent) Kind() string { return "taken" }
func (e TakenEvent) String() string {
	return fmt.Sprintf("taken %d epoch %d of %d", e.Ticket, e.Epoch, e.N)
}

// ReleasedEvent: this process no longer acts on Ticket (it is leaving).
type ReleasedEvent struct {
	Event  string `json:"event"` // "released"
	Ticket uint32 `json:"ticket"`
	Epoch  uint64 `json:"epoch"`
}

func (e ReleasedEvent) Kind() string { return "released" }
func (e ReleasedEvent) String() string {
	return fmt.Sprintf("released %d epoch %d", e.Ticket, e.Epoch)
}

// LeftEvent: this process has left the core; its range belongs to its
// predecessor.
type LeftEvent struct {
	Event string `json:"event"` // "left"
}

func (e LeftEvent) Kind() string   { return "left" }
func (e LeftEvent) String() string { return "left" }

// ExcludedEvent: this process lost its support (fewer than half of its
// predecessors vouched for it within the window, §4) and acts no more;
// its range will be reclaimed by its predecessor.
type ExcludedEvent struct {
	Event  string `json:"event"` // "excluded"
	Ticket uint32 `json:"ticket"`
	Epoch  uint64 `json:"epoch"`
	// Why says, for the log, how the support ran out: how late this
	// process ran, and each predecessor's last vouch (its age, how long
	// it counted, its factor). Not printed with the event.
	Why string `json:"-"`
}

func (e ExcludedEvent) Kind() string { return "excluded" }
func (e ExcludedEvent) String() string {
	return fmt.Sprintf("excluded %d epoch %d", e.Ticket, e.Epoch)
}

// ReclaimedEvent: this process excluded its failed successors and now
// coordinates tickets From down to To (§4, Algorithm 5). Excluded are the
// processes it excluded (E_pq's owners, closest first): their members
// leave the address book (AddressBook.Exclude).
type ReclaimedEvent struct {
	Event    string    `json:"event"` // "reclaimed"
	From     uint32    `json:"from"`
	To       uint32    `json:"to"`
	Excluded []node.ID `json:"excluded,omitempty"`
}

func (e ReclaimedEvent) Kind() string { return "reclaimed" }
func (e ReclaimedEvent) String() string {
	return fmt.Sprintf("reclaimed %d..%d", e.From, e.To)
}

// ExcludingEvent: this process suspects its successor and asks for the
// exclusion of the tickets strictly between From (its own) and To (the
// candidate new successor's), Algorithm 5. Emitted only with
// Config.Phases: the simulator times a reclaim's phases with it.
type ExcludingEvent struct {
	Event    string `json:"event"` // "excluding"
	From, To uint32
}

func (e ExcludingEvent) Kind() string { return "excluding" }
func (e ExcludingEvent) String() string {
	return fmt.Sprintf("excluding between %d and %d", e.From, e.To)
}

// TemporaryEvent: a quorum acknowledged the exclusion of the tickets
// strictly between From and To; this process is their temporary
// coordinator for Wait (§4), of which Margin is Config.Margin (the kill
// grace). Emitted only with Config.Phases.
type TemporaryEvent struct {
	Event        string `json:"event"` // "temporary"
	From, To     uint32
	Wait, Margin time.Duration
	// Tickets: how many are excluded (strictly between From and To);
	// Chain: the processes of E_pq the wait counts (tempChain: those
	// known, and one per ticket that may hold a process the excluder
	// does not know, up to k+1).
	Tickets, Chain int
}

func (e TemporaryEvent) Kind() string { return "temporary" }
func (e TemporaryEvent) String() string {
	return fmt.Sprintf("temporary coordinator between %d and %d for %v (%d tickets, a chain of %d)", e.From, e.To, e.Wait, e.Tickets, e.Chain)
}
