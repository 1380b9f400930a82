package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"sync"
)

// The control socket speaks JSON lines. A client sends requests:
//
//	{"op":"acquire","name":"db","nonblock":false}
//	{"op":"release","name":"db"}
//	{"op":"status"}
//	{"op":"watch"}
//
// and receives events: acquired, busy, lost, released, valid (the lease on
// a held lock is good for ms more), status, coordinator, error. A
// connection is one client: when it closes, every lock it holds or waits
// for is released.
type request struct {
	Op       string `json:"op"`
	Name     string `json:"name,omitempty"`
	NonBlock bool   `json:"nonblock,omitempty"`
}

type reply struct {
	Event       string          `json:"event"`
	Name        string          `json:"name,omitempty"`
	Token       uint64          `json:"token,omitempty"`
	Client      uint64          `json:"client,omitempty"`
	Node        uint32          `json:"node,omitempty"`
	MS          int64           `json:"ms,omitempty"`
	UntilNS     int64           `json:"until_ns,omitempty"` // lease end, Unix ns: daemon and client share the host's clock
	Reason      string          `json:"reason,omitempty"`
	Error       string          `json:"error,omitempty"`
	Coordinator uint32          `json:"coordinator,omitempty"`
	Term        uint64          `json:"term,omitempty"`
	Status      json.RawMessage `json:"status,omitempty"`
}

func (r reply) String() string {
	switch r.Event {
	case "acquired", "released":
		return fmt.Sprintf("%s %s token %d", r.Event, r.Name, r.Token)
	case "lost":
		return fmt.Sprintf("lost %s token %d (%s)", r.Name, r.Token, r.Reason)
	case "busy":
		return "busy " + r.Name
	case "coordinator":
		return fmt.Sprintf("coordinator %d term %d", r.Coordinator, r.Term)
	case "error":
		return "error " + r.Error
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// conn wraps one control connection with line framing on both sides.
type conn struct {
	c   net.Conn
	r   *bufio.Scanner
	mu  sync.Mutex
	enc *json.Encoder
}

func newConn(c net.Conn) *conn {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	return &conn{c: c, r: sc, enc: json.NewEncoder(c)}
}

func (c *conn) send(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enc.Encode(v)
}

// next reads one JSON line into v.
func (c *conn) next(v any) error {
	if !c.r.Scan() {
		if err := c.r.Err(); err != nil {
			return err
		}
		return fmt.Errorf("connection closed")
	}
	return json.Unmarshal(c.r.Bytes(), v)
}
