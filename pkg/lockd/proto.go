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
// held at at_ns is good until its own end: until_ns, or the one the list
// "each" gives for it; with a name, that lock only), status, error; a watcher also receives
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
	AtNS        int64           `json:"at_ns,omitempty"` // acquired: when granted; valid: when the daemon looked (it vouches for locks granted before)
	Each        []LockUntil     `json:"each,omitempty"`  // valid: the locks whose lease ends before until_ns, each with its own end
	Reason      string          `json:"reason,omitempty"`
	Error       string          `json:"error,omitempty"`
	Coordinator uint32          `json:"coordinator,omitempty"`
	Term        uint64          `json:"term,omitempty"`
	Status      json.RawMessage `json:"status,omitempty"`
}

// LockUntil is one lock's own lease end in a "valid" reply.
type LockUntil struct {
	Name    string `json:"name"`
	UntilNS int64  `json:"until_ns"`
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
	r.UntilNS, r.AtNS, r.Each = 0, 0, nil
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
	name    string
	granted time.Time
}

// NewLease starts the lease of a grant. The lock counts as held from the
// grant's at_ns (the daemon's clock, the clock of its "valid" replies),
// not from when this process read the grant: a client that reads late
// must still take the extensions the daemon sent meanwhile.
func NewLease(grant Reply) *Lease {
	l := &Lease{Lease: cli.NewLease(time.Time{}), name: grant.Name, granted: time.Now()}
	if grant.AtNS > 0 {
		l.granted = time.Unix(0, grant.AtNS)
	}
	l.Extend(grant)
	return l
}

// Extend takes a grant or "valid" reply: the daemon, on the same host,
// says until when (its clock is this clock).
//
// A "valid" reply without a name speaks for every lock the client held
// when the daemon looked (at_ns): a lock granted after that is not
// extended by it. Each lock is extended to its own lease's end: the one
// the reply's "each" gives for it, or else until_ns, so a lock whose
// renewal lags ends alone.
func (l *Lease) Extend(r Reply) {
	until := r.UntilNS
	if r.Event == "valid" {
		if r.Name != "" && r.Name != l.name {
			return
		}
		for _, e := range r.Each {
			if e.Name == l.name {
				until = e.UntilNS
				break
			}
		}
	}
	l.ExtendTo(r, until)
}

// ExtendTo is Extend when the caller has looked up the lock's own end
// (until, in Unix nanoseconds) in r already.
func (l *Lease) ExtendTo(r Reply, until int64) {
	if r.Event == "valid" && r.Name == "" && !l.granted.Before(time.Unix(0, r.AtNS)) {
		return
	}
	if until > 0 {
		l.Lease.Extend(time.Unix(0, until))
	}
}

// CheckEvery is how often a client judges its lease.
const CheckEvery = cli.CheckEvery
