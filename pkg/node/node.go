package node

import (
	"fmt"
	"strconv"
	"time"
)

// ID names a process in a cluster. Zero is never a valid ID.
type ID uint32

// None is the zero ID: "no process".
const None ID = 0

// MaxTerm bounds every term and Lamport time a protocol takes from the
// wire. Fencing tokens are built as term<<32 | counter (or time<<32 | ID),
// which cannot wrap while terms stay below 2^32: the bound leaves 2^31
// steps of growth above anything a peer — or a forged frame — can claim.
const MaxTerm = 1<<31 - 1

func (id ID) String() string { return strconv.FormatUint(uint64(id), 10) }

// ParseID parses a decimal, non-zero process ID.
func ParseID(s string) (ID, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil || v == 0 {
		return None, fmt.Errorf("node: invalid id %q (want an integer from 1 to %d)", s, uint32(1<<32-1))
	}
	return ID(v), nil
}

// Envelope is one message with its sender and receiver. A local request to a
// machine (for example "campaign now") is an Envelope whose From is the
// machine's own ID.
type Envelope[M any] struct {
	From, To ID
	Msg      M
}

// Event is something a machine reports to its user: a leader elected, a lock
// granted, a value decided. String renders the one-line text form
// ("leader 3 term 7"); the JSON form is the value itself marshalled with
// encoding/json, which must include a "event" field naming the kind.
type Event interface {
	Kind() string
	String() string
}

// Ready is what a machine has accumulated since the last call to Ready.
type Ready[M any] struct {
	Msgs   []Envelope[M] // to send, in order
	Events []Event       // to report, in order
	Wake   time.Time     // earliest time the machine needs Tick; zero means no timer
}

// Machine is a protocol state machine. Implementations must be deterministic:
// the same configuration (including any seeded random source) and the same
// sequence of calls produce the same Ready values.
type Machine[M any] interface {
	// Step hands the machine a peer's message or a local request. An error
	// means the message was rejected (malformed, from a stranger); the
	// machine's state is unchanged and the caller counts the rejection.
	Step(now time.Time, in Envelope[M]) error
	// Tick tells the machine that time has reached now; timeouts fire here.
	Tick(now time.Time)
	// Ready drains the accumulated output.
	Ready() Ready[M]
}

// Statuser is implemented by machines that can describe their state for a
// status query. The value must marshal with encoding/json.
type Statuser interface {
	Status() any
}
