package mcastd

import (
	"bufio"
	"encoding/base64"
	"io"
	"strconv"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Printer writes deliveries, and with --json the member's own sends and its
// clean exit, which is what 'mcast check' reads. Output is buffered: Flush
// whenever nothing else is waiting.
type Printer struct {
	out    *cli.Output
	w      *bufio.Writer // the buffer under out: text lines go straight in
	member node.ID
	b64    bool
}

// LogLine is one --json line of 'mcast run'.
type LogLine struct {
	Time    string         `json:"time"`
	Event   string         `json:"event"`
	Member  node.ID        `json:"member"`
	View    uint64         `json:"view,omitempty"` // dynamic groups
	Leader  node.ID        `json:"leader,omitempty"`
	Members []mcast.Member `json:"members,omitempty"`
	Joined  []mcast.Member `json:"joined,omitempty"`
	Left    []mcast.Member `json:"left,omitempty"`
	Inc     uint64         `json:"inc,omitempty"`         // removed, merge: the new incarnation
	Into    node.ID        `json:"into,omitempty"`        // merge: the leader of the component this one joins
	Next    *mcast.Member  `json:"next_leader,omitempty"` // left: the leader of the view left into
	Sender  node.ID        `json:"sender,omitempty"`
	Seq     uint64         `json:"seq,omitempty"`
	VT      []uint64       `json:"vt,omitempty"`
	Payload *string        `json:"payload,omitempty"`
	Sent    *uint64        `json:"sent,omitempty"`
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
func (p *Printer) text(sender node.ID, seq uint64, payload []byte) {
	var num [48]byte
	b := strconv.AppendUint(num[:0], uint64(sender), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, seq, 10)
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

// Deliver prints another member's message.
func (p *Printer) Deliver(ev mcast.DeliverEvent) {
	if !p.out.IsJSON() {
		p.text(ev.Sender, ev.Seq, ev.Payload)
		return
	}
	pl := p.payload(ev.Payload)
	p.out.JSON(LogLine{Time: now(), Event: "deliver", Member: p.member, Sender: ev.Sender, Seq: ev.Seq, VT: ev.VT, Payload: &pl})
}

// Send prints the member's own line, which it delivers as it sends it.
func (p *Printer) Send(ev mcast.SendEvent) {
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
		p.out.JSON(LogLine{Time: now(), Event: "exit", Member: p.member, Sent: &sent})
	}
}

// NewPrinter prints on w: text lines, or JSON lines with json, payloads in
// base64 with b64.
func NewPrinter(w io.Writer, member node.ID, json, b64 bool) *Printer {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &Printer{out: cli.NewOutput(bw, json), w: bw, member: member, b64: b64}
}

// Flush writes out what is buffered.
func (p *Printer) Flush() error { return p.w.Flush() }
