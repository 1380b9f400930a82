package mcastd

import (
	"bytes"
	"encoding/base64"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"io"
	"strconv"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Printer formats deliveries, and with --json the member's own sends and
// its clean exit, which is what 'mcast check' reads. It never writes:
// Flush hands what it formatted to its Writer, whose goroutine writes it,
// so that a reader that stops never stops the member (see Writer).
type Printer struct {
	out    *cli.Output
	w      *bytes.Buffer // what is formatted and not yet handed over: text lines go straight in
	wr     *Writer
	member node.ID
	b64    bool
	lines  uint64 // lines in w
	cost   uint64 // Cost of the deliveries in w
}

// LogLine is one --json line of 'mcast run'.
type LogLine struct {
	Time    string         `json:"time"`
	Event   string         `json:"event"`
	Member  node.ID        `json:"member"`
	View    uint64         `json:"view,omitempty"` // dynamic groups
	Leader  node.ID        `json:"leader,omitempty"`
	Members []group.Member `json:"members,omitempty"`
	Joined  []group.Member `json:"joined,omitempty"`
	Left    []group.Member `json:"left,omitempty"`
	Inc     uint64         `json:"inc,omitempty"`         // removed, merge: the new incarnation; deliver, send (dynamic groups): the sender's
	Into    node.ID        `json:"into,omitempty"`        // merge: the leader of the component this one joins
	Next    *group.Member  `json:"next_leader,omitempty"` // left: the leader of the view left into
	Sender  node.ID        `json:"sender,omitempty"`
	Seq     uint64         `json:"seq,omitempty"`
	VT      []uint64       `json:"vt,omitempty"`
	Payload *string        `json:"payload,omitempty"`
	Sent    *uint64        `json:"sent,omitempty"`
	Seqs    []uint64       `json:"seqs,omitempty"`    // lost: this member's messages the others may lack; missed: the sender's messages this member lacks
	Unknown bool           `json:"unknown,omitempty"` // lost, missed: the view's cut is unknown here
	Cause   string         `json:"cause,omitempty"`   // removed: how this member learnt it (group.RemovedEvent.Cause)
}

func (p *Printer) payload(b []byte) string {
	if p.b64 {
		return base64.StdEncoding.EncodeToString(b)
	}
	return string(b)
}

func now() string { return time.Now().Format(time.RFC3339Nano) }

// text writes '<sender> <seq> <payload>' without formatting allocations:
// at a few hundred thousand lines a second they add up.
// (or '<sender> <id> <payload>' with id set).
func (p *Printer) text(sender node.ID, seq uint64, payload []byte, id ...byte) {
	var num [48]byte
	b := strconv.AppendUint(num[:0], uint64(sender), 10)
	b = append(b, ' ')
	if id != nil {
		b = append(b, id...)
	} else {
		b = strconv.AppendUint(b, seq, 10)
	}
	b = append(b, ' ')
	p.w.Write(b)
	if p.b64 {
		enc := base64.NewEncoder(base64.StdEncoding, p.w)
		enc.Write(payload)
		enc.Close()
	} else {
		p.w.Write(payload)
	}
	p.w.WriteByte('\n')
}

// line counts one line of output, a delivery of payload unless nil.
func (p *Printer) line(payload []byte, delivery bool) {
	p.lines++
	if delivery {
		p.cost += mcast.Cost(payload)
	}
}

// textView writes '<sender> <view>.<seq> <payload>'.
func (p *Printer) textView(sender node.ID, view, seq uint64, payload []byte) {
	var num [48]byte
	b := strconv.AppendUint(num[:0], view, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, seq, 10)
	p.text(sender, 0, payload, b...)
}

// Deliver prints another member's message.
func (p *Printer) Deliver(ev mcast.DeliverEvent) {
	p.line(ev.Payload, true)
	if !p.out.IsJSON() {
		p.text(ev.Sender, ev.Seq, ev.Payload)
		return
	}
	pl := p.payload(ev.Payload)
	p.out.JSON(LogLine{Time: now(), Event: "deliver", Member: p.member, Sender: ev.Sender, Seq: ev.Seq, VT: ev.VT, Payload: &pl})
}

// Send prints the member's own line, which it delivers as it sends it.
func (p *Printer) Send(ev mcast.SendEvent) {
	p.line(ev.Payload, true)
	if !p.out.IsJSON() {
		p.text(p.member, ev.Seq, ev.Payload)
		return
	}
	pl := p.payload(ev.Payload)
	p.out.JSON(LogLine{Time: now(), Event: "send", Member: p.member, Seq: ev.Seq, VT: ev.VT, Payload: &pl})
}

// Exit ends a --json log cleanly ('mcast check' tells crashed members by
// its absence).
func (p *Printer) Exit(sent uint64) {
	if p.out.IsJSON() {
		p.lines++
		p.out.JSON(LogLine{Time: now(), Event: "exit", Member: p.member, Sent: &sent})
	}
}

// NewPrinter prints on w, through a Writer of its own: text lines, or
// JSON lines with json, payloads in base64 with b64.
func NewPrinter(w io.Writer, member node.ID, json, b64 bool) *Printer {
	buf := new(bytes.Buffer)
	return &Printer{out: cli.NewOutput(buf, json), w: buf, wr: NewWriter(w), member: member, b64: b64}
}

// Writer is the printer's writer.
func (p *Printer) Writer() *Writer { return p.wr }

// Buffered is the bytes formatted and not yet handed to the writer.
func (p *Printer) Buffered() int { return p.w.Len() }

// Flush hands what is formatted to the writer (it does not wait for the
// write); the error is the writer's, if writing failed.
func (p *Printer) Flush() error {
	if p.w.Len() > 0 || p.cost > 0 {
		p.wr.Push(bytes.Clone(p.w.Bytes()), p.lines, p.cost)
		p.w.Reset()
		p.lines, p.cost = 0, 0
	}
	return p.wr.Err()
}
