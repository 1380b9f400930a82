// Package lockd is the lock service around pkg/mutex: the daemon that runs
// one member's machine and serves local clients on a Unix control socket,
// and the clients that talk to it (run, hold, session, status, watch).
//
// The control socket speaks JSON lines. A client sends requests:
//
//	{"op":"acquire","name":"db","nonblock":false}
//	{"op":"release","name":"db"}
//	{"op":"status"}
//	{"op":"watch"}            (or "watch-cluster")
//
// and receives replies: acquired, busy, lost, valid (every lock the client
// holds is good until until_ns; with a name, that lock), status, error; a watcher also receives
// released and coordinator. A release is not answered: the daemon takes a
// connection's requests in order. A connection is one client: when it
// closes, every lock it holds or waits for is released.
package lockd

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

// Tool is the program's name, in messages and environment variables.
const Tool = "lockd"

// Request is one line a client sends.
type Request struct {
	Op       string `json:"op"`
	Name     string `json:"name,omitempty"`
	NonBlock bool   `json:"nonblock,omitempty"`
}

// Reply is one line the daemon sends. The fields printed to users (with
// --json) are event, name, token, client, node, reason, error,
// coordinator and term; until_ns is for the client's lease only.
type Reply struct {
	Event       string          `json:"event"`
	Name        string          `json:"name,omitempty"`
	Token       uint64          `json:"token,omitempty"`
	Client      uint64          `json:"client,omitempty"` // the daemon's number for the connection
	Node        uint32          `json:"node,omitempty"`   // the member whose client it is (watch --cluster)
	UntilNS     int64           `json:"until_ns,omitempty"`
	AtNS        int64           `json:"at_ns,omitempty"` // valid: when the daemon looked; it vouches for locks granted before`
	Reason      string          `json:"reason,omitempty"`
	Error       string          `json:"error,omitempty"`
	Coordinator uint32          `json:"coordinator,omitempty"`
	Term        uint64          `json:"term,omitempty"`
	Status      json.RawMessage `json:"status,omitempty"`
}

func (r Reply) String() string {
	switch r.Event {
	case "acquired", "released":
		return fmt.Sprintf("%s %s token %d", r.Event, r.Name, r.Token)
	case "lost":
		return fmt.Sprintf("lost %s token %d (%s)", r.Name, r.Token, r.Reason)
	case "busy", "timeout":
		return r.Event + " " + r.Name
	case "unavailable":
		return fmt.Sprintf("unavailable %s (%s)", r.Name, r.Reason)
	case "coordinator":
		return fmt.Sprintf("coordinator %d term %d", r.Coordinator, r.Term)
	case "error":
		return "error " + r.Error
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// Print writes r to out as users see it: a text line, or a JSON line
// without the lease's internals.
func Print(out *cli.Output, r Reply) {
	r.UntilNS = 0
	out.Value(r.String(), r)
}

// CheckName takes the lock NAME off the front of a command's arguments.
func CheckName(args []string) (string, error) {
	if len(args) < 1 || args[0] == "" {
		return "", cli.Exitf(cli.ExitUsage, "a lock NAME is required")
	}
	if err := ValidName(args[0]); err != nil {
		return "", cli.Exitf(cli.ExitUsage, "%v", err)
	}
	return args[0], nil
}

// ValidName says why name cannot name a lock: it must be 1 to 255 bytes of
// UTF-8 without spaces or control characters. Every text output names a
// lock as one space-separated word on a line (`acquired NAME token T`,
// `lockd status`, `lockd watch`, the session protocol), so a space would
// make a line ambiguous and a newline would let a name forge a line that
// a script reads as an event of its own.
func ValidName(name string) error {
	switch {
	case name == "":
		return errors.New("a lock name cannot be empty")
	case len(name) > 255:
		return errors.New("lock names are at most 255 bytes")
	case !utf8.ValidString(name):
		return errors.New("lock names must be UTF-8")
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("lock names cannot contain spaces or control characters (%q)", name)
		}
	}
	return nil
}

// Lease is a held lock's cli.Lease, extended by the daemon's grant and
// "valid" replies.
type Lease struct {
	*cli.Lease
	granted time.Time
}

// NewLease starts the lease of a grant.
func NewLease(grant Reply) *Lease {
	l := &Lease{Lease: cli.NewLease(time.Time{}), granted: time.Now()}
	l.Extend(grant)
	return l
}

// Extend takes a grant or "valid" reply: the daemon, on the same host,
// says until when (its clock is this clock).
//
// A "valid" reply without a name speaks for every lock the client held
// when the daemon looked (at_ns): a lock granted after that is not
// extended by it.
func (l *Lease) Extend(r Reply) {
	if r.Event == "valid" && r.Name == "" && !l.granted.Before(time.Unix(0, r.AtNS)) {
		return
	}
	if r.UntilNS > 0 {
		l.Lease.Extend(time.Unix(0, r.UntilNS))
	}
}

// CheckEvery is how often a client judges its lease.
const CheckEvery = cli.CheckEvery
