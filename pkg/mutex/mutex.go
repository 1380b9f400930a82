package mutex

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Algo selects the mutual exclusion algorithm.
type Algo uint8

const (
	Central        Algo = 1
	RicartAgrawala Algo = 2
	TokenRing      Algo = 3
	Voting         Algo = 4
)

func (a Algo) String() string {
	switch a {
	case Central:
		return "central"
	case RicartAgrawala:
		return "ricart-agrawala"
	case TokenRing:
		return "token-ring"
	case Voting:
		return "voting"
	}
	return fmt.Sprintf("algo(%d)", uint8(a))
}

// ParseAlgo parses an --algo value.
func ParseAlgo(s string) (Algo, error) {
	for _, a := range []Algo{Central, RicartAgrawala, TokenRing, Voting} {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("mutex: unknown algorithm %q (available: central, ricart-agrawala, token-ring, voting)", s)
}

// safety is the fraction of a lease a holder (or a coordinator counting
// vouches) relies on: it absorbs clock rate differences below 10%.
const safety = 0.9

// Config configures a Machine. Zero values mean the default.
type Config struct {
	ID    node.ID
	Peers []node.ID // every daemon, this one included
	Algo  Algo      // default Central

	// Lease is how long a grant and a vouch last without renewal
	// (default 1s). A partitioned holder loses its lock within 0.9·Lease;
	// a failed coordinator's locks move on within about 2·Lease.
	Lease time.Duration

	// Election timing for coordinator failover (defaults as package election).
	Heartbeat, Timeout time.Duration
	Term               uint64 // highest election term known at start
	Rand               *rand.Rand

	// Quorum is voting's m, the votes needed out of n (default ⌊n/2⌋+1;
	// must exceed n/2).
	Quorum int
	// Boot numbers this life of the daemon; it must grow with every
	// restart (token ring: a later life proves an earlier one crashed).
	Boot uint64
	// Backups is the token ring's k: copies kept on the next k successors
	// (Arantes–Sopena). 0 (or more than n−1): every other daemon, n−1;
	// negative: none, Le Lann's plain ring.
	Backups int
	// RingHold is how long an idle token ring holder keeps the token
	// before passing it on (default 1ms; negative: not at all, as in
	// tests that count hops).
	RingHold time.Duration

	// firstCounter is where a central coordinator's grant counter starts
	// in each term (default 0). Tests only: they start near the limit.
	firstCounter uint64

	// noTakeoverWait plants a bug: a new coordinator grants unreported
	// locks at once. Tests only.
	noTakeoverWait bool
	// sessionTrust plants a bug: a central coordinator answers every
	// session renewal as if the member's session matched its own, so a
	// lock it no longer counts (or never did) is renewed all the same.
	// Tests only.
	sessionTrust bool
	// raAlwaysOK plants a bug: Ricart–Agrawala answers OK even when its own
	// earlier request should win. Tests only.
	raAlwaysOK bool
	// ringRegrant plants a bug: the token ring grants a name again on the
	// visit that freed it, even to this daemon. Tests only (fairness).
	ringRegrant bool
	// raHandoff plants an order bug: Ricart–Agrawala passes a held name to
	// the next local client without asking again.
	raHandoff bool
	// centralLIFO plants an order bug: the coordinator grants the newest
	// waiter first.
	centralLIFO bool
	// ringNoBump plants a bug: UseBackup keeps the count, so a late copy
	// of the crashed holder's token is taken for a newer one. Tests only.
	ringNoBump bool
	// voteEarlyExpiry plants a bug: a voting coordinator counts a vote
	// as given back three quarters of a lease early. Tests only.
	voteEarlyExpiry bool
	// forgetVotes: a restarted voting coordinator votes at once, having
	// forgotten its votes (Lin et al.'s coordinators, Tanenbaum ch. 6),
	// instead of staying quiet for a lease. Tests only.
	forgetVotes bool
	// voteValidFromAck plants a bug: a voting holder measures its
	// validity from the acknowledgement that completed the quorum, not
	// from when it sent the confirmation. Tests only.
	voteValidFromAck bool
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{Algo: Central, Lease: time.Second}
}

// GrantEvent: this daemon's Client now holds Name with Token.
// Text: "acquired NAME token T".
type GrantEvent struct {
	Event  string        `json:"event"` // "acquired"
	Name   string        `json:"name"`
	Client uint64        `json:"client"`
	Token  uint64        `json:"token"`
	Valid  time.Duration `json:"valid_ns"` // how long the lease is good for from now
	// At is now: the time the machine granted at. The lease ends at
	// At+Valid; a service that passes the grant on later must not count
	// Valid from its own, later, clock reading.
	At time.Time `json:"-"`
}

func (e GrantEvent) Kind() string   { return "acquired" }
func (e GrantEvent) String() string { return fmt.Sprintf("acquired %s token %d", e.Name, e.Token) }

// FenceToken is the grant's fencing token (for the metrics endpoint).
func (e GrantEvent) FenceToken() uint64 { return e.Token }

// BusyEvent: a non-blocking request found Name held.
type BusyEvent struct {
	Event  string `json:"event"` // "busy"
	Name   string `json:"name"`
	Client uint64 `json:"client"`
}

func (e BusyEvent) Kind() string   { return "busy" }
func (e BusyEvent) String() string { return fmt.Sprintf("busy %s", e.Name) }

// UnavailableEvent: a non-blocking request cannot be decided now — no
// coordinator, no quorum, or a new coordinator still taking over — which
// is not the same as Name being held.
type UnavailableEvent struct {
	Event  string `json:"event"` // "unavailable"
	Name   string `json:"name"`
	Client uint64 `json:"client"`
	Reason string `json:"reason"`
}

func (e UnavailableEvent) Kind() string { return "unavailable" }
func (e UnavailableEvent) String() string {
	return fmt.Sprintf("unavailable %s (%s)", e.Name, e.Reason)
}

// LostEvent: Client's lease on Name ran out or was revoked.
type LostEvent struct {
	Event  string `json:"event"` // "lost"
	Name   string `json:"name"`
	Client uint64 `json:"client"`
	Token  uint64 `json:"token"`
	Reason string `json:"reason"`
}

func (e LostEvent) Kind() string { return "lost" }
func (e LostEvent) String() string {
	return fmt.Sprintf("lost %s token %d (%s)", e.Name, e.Token, e.Reason)
}

// ReleasedEvent: Client released Name.
type ReleasedEvent struct {
	Event  string `json:"event"` // "released"
	Name   string `json:"name"`
	Client uint64 `json:"client"`
	Token  uint64 `json:"token"`
}

func (e ReleasedEvent) Kind() string   { return "released" }
func (e ReleasedEvent) String() string { return fmt.Sprintf("released %s token %d", e.Name, e.Token) }

// CoordinatorEvent: the daemon follows a new coordinator.
type CoordinatorEvent struct {
	Event       string  `json:"event"` // "coordinator"
	Coordinator node.ID `json:"coordinator"`
	Term        uint64  `json:"term"`
}

func (e CoordinatorEvent) Kind() string { return "coordinator" }
func (e CoordinatorEvent) String() string {
	return fmt.Sprintf("coordinator %d term %d", e.Coordinator, e.Term)
}

// firstAttempt is where a daemon's request identifiers (Attempt) start:
// at random, so that identifiers differ across members and across one
// member's lives, and a reply that reaches the wrong member (or an old
// life) matches none of its requests. Replies are matched on Name, Client
// and Attempt together.
func firstAttempt(cfg Config) uint64 {
	if cfg.Rand == nil {
		return 0
	}
	return cfg.Rand.Uint64() >> 8 // room to count up without wrapping
}

// Machine is one lockd daemon's protocol state, whatever the algorithm.
type Machine interface {
	node.Machine[Msg]
	// Holdings lists the locks local clients hold with a valid lease.
	Holdings(now time.Time) []Holding
	// Status describes the daemon and the lock table as far as it knows.
	Status() any
}

// New returns the Machine for cfg.Algo. The runner must call Tick once at
// start.
func New(cfg Config) (Machine, error) {
	d := DefaultConfig()
	if cfg.Algo == 0 {
		cfg.Algo = d.Algo
	}
	switch cfg.Algo {
	case Central:
		return newCentral(cfg)
	case RicartAgrawala:
		return newRA(cfg)
	case TokenRing:
		return newRing(cfg)
	case Voting:
		return newVoting(cfg)
	}
	return nil, fmt.Errorf("mutex: algorithm %v not available", cfg.Algo)
}

// Holding is one lock a local client holds.
type Holding struct {
	Name   string
	Client uint64
	Token  uint64
	Until  time.Time // the lease's end on this daemon's clock
}

// LockStatus is one row of a daemon's lock table in Status.
type LockStatus struct {
	Name   string   `json:"name"`
	Holder node.ID  `json:"holder,omitempty"`
	Client uint64   `json:"client,omitempty"`
	Token  uint64   `json:"token,omitempty"`
	Queue  []string `json:"queue,omitempty"`
	// A member's own row, with the algorithms where each member knows
	// only its clients (MergeLocks joins them): the member, and with
	// Ricart–Agrawala the Lamport stamp of its outstanding request.
	Node  node.ID `json:"node,omitempty"`
	Stamp uint64  `json:"stamp,omitempty"`
}
