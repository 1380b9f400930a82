// Package ctl is lockd's control protocol — JSON lines over the daemon's
// Unix socket — and the clients that speak it (lockd run in particular).
// It imports no command-line framework and no network package, so that
// package quick can run `lockd run` before those initialise.
package ctl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/roundtable-go/roundtable/pkg/rawio"
)

// The control socket speaks JSON lines. A client sends requests:
//
//	{"op":"acquire","name":"db","nonblock":false}
//	{"op":"release","name":"db"}
//	{"op":"status"}
//	{"op":"watch"}
//
// and receives events: acquired, busy, lost, valid (the lease on a held
// lock is good for ms more), status, error; a watcher also receives
// released and coordinator. A release is not answered: the daemon takes a
// connection's requests in order. A connection is one client: when it
// closes, every lock it holds or waits for is released.
// Request is one line a client sends.
type Request struct {
	Op       string `json:"op"`
	Name     string `json:"name,omitempty"`
	NonBlock bool   `json:"nonblock,omitempty"`
}

// Reply is one line the daemon sends.
type Reply struct {
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

func (r Reply) String() string {
	switch r.Event {
	case "acquired", "released":
		return fmt.Sprintf("%s %s token %d", r.Event, r.Name, r.Token)
	case "lost":
		return fmt.Sprintf("lost %s token %d (%s)", r.Name, r.Token, r.Reason)
	case "busy", "timeout":
		return r.Event + " " + r.Name
	case "coordinator":
		return fmt.Sprintf("coordinator %d term %d", r.Coordinator, r.Term)
	case "error":
		return "error " + r.Error
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// Conn wraps one control connection with line framing on both sides.
type Conn struct {
	c   io.ReadWriteCloser
	rw  io.ReadWriter // c, or raw I/O on c's descriptor
	r   *bufio.Scanner
	mu  sync.Mutex
	enc *json.Encoder
}

// NewConn frames c.
func NewConn(c io.ReadWriteCloser) *Conn {
	var rw io.ReadWriter = c
	if r := rawio.NewStream(c); r != nil {
		rw = r // see package rawio: a system-call entry per message woke sysmon
	}
	sc := bufio.NewScanner(rw)
	// Lines are short; the buffer grows (up to 1 MiB, for status) only when
	// one is not. A 64 KiB buffer up front was 16 fresh pages to fault in
	// for every `lockd run`.
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	return &Conn{c: c, rw: rw, r: sc, enc: json.NewEncoder(rw)}
}

// Send writes v, a Request or a Reply, as one JSON line.
func (c *Conn) Send(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch v := v.(type) {
	case Request:
		_, err := c.rw.Write(v.appendJSON(nil))
		return err
	case Reply:
		if len(v.Status) == 0 {
			_, err := c.rw.Write(v.appendJSON(nil))
			return err
		}
	}
	return c.enc.Encode(v)
}

// appendJSON is json.Marshal(r) plus a newline, without reflection: the
// client's first message no longer builds encoding/json's encoder for the
// type, which was about 3% of a `lockd run`'s CPU.
func (r Request) appendJSON(b []byte) []byte {
	b = append(b, `{"op":`...)
	b = appendString(b, r.Op)
	if r.Name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, r.Name)
	}
	if r.NonBlock {
		b = append(b, `,"nonblock":true`...)
	}
	return append(b, "}\n"...)
}

// appendJSON is json.Marshal(r) plus a newline for a reply without
// Status (encoding/json compacts that raw text; it writes those itself).
func (r Reply) appendJSON(b []byte) []byte {
	b = append(b, `{"event":`...)
	b = appendString(b, r.Event)
	if r.Name != "" {
		b = appendString(append(b, `,"name":`...), r.Name)
	}
	if r.Token != 0 {
		b = strconv.AppendUint(append(b, `,"token":`...), r.Token, 10)
	}
	if r.Client != 0 {
		b = strconv.AppendUint(append(b, `,"client":`...), r.Client, 10)
	}
	if r.Node != 0 {
		b = strconv.AppendUint(append(b, `,"node":`...), uint64(r.Node), 10)
	}
	if r.MS != 0 {
		b = strconv.AppendInt(append(b, `,"ms":`...), r.MS, 10)
	}
	if r.UntilNS != 0 {
		b = strconv.AppendInt(append(b, `,"until_ns":`...), r.UntilNS, 10)
	}
	if r.Reason != "" {
		b = appendString(append(b, `,"reason":`...), r.Reason)
	}
	if r.Error != "" {
		b = appendString(append(b, `,"error":`...), r.Error)
	}
	if r.Coordinator != 0 {
		b = strconv.AppendUint(append(b, `,"coordinator":`...), uint64(r.Coordinator), 10)
	}
	if r.Term != 0 {
		b = strconv.AppendUint(append(b, `,"term":`...), r.Term, 10)
	}
	return append(b, "}\n"...)
}

// Line is r as the daemon writes it: one JSON line.
func (r Reply) Line() []byte {
	if len(r.Status) == 0 {
		return r.appendJSON(nil)
	}
	b, _ := json.Marshal(r)
	return append(b, '\n')
}

// ParseReply reads one reply line, as Conn.Next does (fuzzed against
// encoding/json in FuzzReplyParse).
func ParseReply(line []byte) (Reply, error) {
	var r Reply
	err := r.parse(line)
	return r, err
}

// appendString appends s as a JSON string. Strings that need escaping go
// through encoding/json, so the result is always what it would write.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Replies reads the daemon's lines from now on into a channel, closed when
// the connection ends or a line does not parse.
func (c *Conn) Replies() <-chan Reply {
	ch := make(chan Reply, 16)
	go func() {
		defer close(ch)
		for {
			var r Reply
			if c.Next(&r) != nil {
				return
			}
			ch <- r
		}
	}()
	return ch
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Next reads one JSON line into v.
func (c *Conn) Next(v any) error {
	if !c.r.Scan() {
		if err := c.r.Err(); err != nil {
			return err
		}
		return fmt.Errorf("connection closed")
	}
	switch v := v.(type) {
	case *Reply:
		return v.parse(c.r.Bytes())
	case *Request:
		if *v = (Request{}); v.parsePlain(c.r.Bytes()) {
			return nil
		}
		*v = Request{}
	}
	return json.Unmarshal(c.r.Bytes(), v)
}

// parse reads one reply line: json.Unmarshal's result for every line the
// daemon writes, key by key with the decoder's token stream instead of
// reflecting over the struct's fields on first use (about 3% of a `lockd
// run`). Keys match exactly; unknown keys are skipped.
func (r *Reply) parse(line []byte) error {
	*r = Reply{}
	if r.parsePlain(line) {
		return nil
	}
	*r = Reply{}
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil {
		return err
	} else if t == nil {
		// null: json.Unmarshal leaves the reply as it is.
		if _, err := dec.Token(); err != io.EOF {
			return fmt.Errorf("data after the reply")
		}
		return nil
	} else if t != json.Delim('{') {
		return fmt.Errorf("reply is not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		var dst any
		switch key {
		case "event":
			dst = &r.Event
		case "name":
			dst = &r.Name
		case "reason":
			dst = &r.Reason
		case "error":
			dst = &r.Error
		case "status":
			dst = &r.Status
		case "token", "client", "node", "ms", "until_ns", "coordinator", "term":
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			if string(raw) == "null" {
				continue // as json.Unmarshal: null leaves the field alone
			}
			if err := r.setNumber(key, string(raw)); err != nil {
				return err
			}
			continue
		default:
			dst = new(json.RawMessage)
		}
		if err := dec.Decode(dst); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the reply")
	}
	return nil
}

func (r *Reply) setNumber(key, n string) error {
	var err error
	switch key {
	case "token":
		r.Token, err = strconv.ParseUint(n, 10, 64)
	case "client":
		r.Client, err = strconv.ParseUint(n, 10, 64)
	case "term":
		r.Term, err = strconv.ParseUint(n, 10, 64)
	case "ms":
		r.MS, err = strconv.ParseInt(n, 10, 64)
	case "until_ns":
		r.UntilNS, err = strconv.ParseInt(n, 10, 64)
	case "node", "coordinator":
		var v uint64
		v, err = strconv.ParseUint(n, 10, 32)
		if key == "node" {
			r.Node = uint32(v)
		} else {
			r.Coordinator = uint32(v)
		}
	}
	if err != nil {
		return fmt.Errorf("reply field %s: %w", key, err)
	}
	return nil
}

// parsePlain reads the lines the daemon writes for grants and the like —
// one flat object, no spaces, ASCII strings without escapes, decimal
// integers — in one pass, and reports false for anything else (parse then
// reads it with encoding/json, which decides what it means).
func (r *Reply) parsePlain(b []byte) bool {
	return plainObject(b, func(key, val []byte, str bool) bool {
		if str {
			switch string(key) {
			case "event":
				r.Event = string(val)
			case "name":
				r.Name = string(val)
			case "reason":
				r.Reason = string(val)
			case "error":
				r.Error = string(val)
			default:
				return false
			}
			return true
		}
		switch string(key) {
		case "token", "client", "node", "ms", "until_ns", "coordinator", "term":
			return plainInt(val) && r.setNumber(string(key), string(val)) == nil
		}
		return false
	})
}

// parsePlain is Reply.parsePlain for what clients send.
func (q *Request) parsePlain(b []byte) bool {
	return plainObject(b, func(key, val []byte, str bool) bool {
		switch {
		case str && string(key) == "op":
			q.Op = string(val)
		case str && string(key) == "name":
			q.Name = string(val)
		case !str && string(key) == "nonblock" && (string(val) == "true" || string(val) == "false"):
			q.NonBlock = string(val) == "true"
		default:
			return false
		}
		return true
	})
}

// plainObject walks a flat JSON object with no spaces, calling field for
// each key and value: str is true for a string (val without its quotes,
// printable ASCII, no escapes), false for a literal (val as written, up
// to the next ',' or the end). It reports false when field does or the
// text is not of that form.
func plainObject(b []byte, field func(key, val []byte, str bool) bool) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	b = b[1 : len(b)-1]
	for len(b) > 0 {
		key, rest, ok := plainString(b)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return false
		}
		b = rest[1:]
		var val []byte
		str := len(b) > 0 && b[0] == '"'
		if str {
			if val, b, ok = plainString(b); !ok {
				return false
			}
		} else {
			i := 0
			for i < len(b) && b[i] != ',' && b[i] != '"' {
				i++
			}
			val, b = b[:i], b[i:]
		}
		if !field(key, val, str) {
			return false
		}
		if len(b) > 0 {
			if b[0] != ',' || len(b) == 1 {
				return false
			}
			b = b[1:]
		}
	}
	return true
}

// plainInt: an optional minus sign and decimal digits, no leading zero.
func plainInt(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainString takes a JSON string of printable ASCII without escapes off
// the front of b.
func plainString(b []byte) (s, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, b, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return b[1:i], b[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, b, false
		}
	}
	return nil, b, false
}
