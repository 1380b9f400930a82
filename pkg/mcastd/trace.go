package mcastd

import (
	"bufio"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// TraceEnv names the file a bench member writes its frame trace to
// (`mcast bench` only; unset: no trace, and the transport is not
// wrapped, so it costs nothing). One line per frame read or sent, in
// wall-clock nanoseconds (one clock for every process of one host):
//
//	R <waited> <read> <from> <seq> <type> <len>   a frame read: when Recv was entered, when it returned
//	S <sent> <to> <seq> <type> <len>              a frame handed to sendto (the time before the call)
//	M <R|S> <from> <seq> <sender> <bench seq> <sent>   a bench message in that data frame (unsealed frames only), and the time its sender stamped on it
//	V <delivered> <sender> <bench seq>             the bench saw the message delivered
//
// The sender's ID and the header's sequence number name a frame at both
// ends, so the trace files of all members of one run give every hop of
// the token: sendto at the holder, read at its successor, and what the
// successor did in between (scripts/totemhops.go sums them).
const TraceEnv = "MCAST_BENCH_TRACE"

type traceRec struct {
	dir    byte
	t0, t1 int64
	peer   node.ID
	seq    uint64
	typ    uint8
	len    int
}

// traceMsg is a bench message in a data frame (kind 'R' or 'S'), or
// delivered (kind 'V').
type traceMsg struct {
	kind   byte
	from   node.ID // the frame's sender (R) or receiver (S)
	seq    uint64  // the frame's
	sender node.ID // the message's
	bseq   uint64  // the bench's sequence number
	t      int64   // V: when delivered; else the message's send stamp
}

// tracer wraps a transport and records every frame read and sent, in
// memory, until write.
type tracer struct {
	transport.Transport
	mu   sync.Mutex
	recs []traceRec
	msgs []traceMsg
}

func newTracer(t transport.Transport) *tracer {
	return &tracer{Transport: t, recs: make([]traceRec, 0, 1<<18)}
}

func (t *tracer) Recv() (transport.Packet, error) {
	t0 := time.Now().UnixNano()
	p, err := t.Transport.Recv()
	t1 := time.Now().UnixNano()
	if err == nil {
		if h, herr := wire.ParseHeader(p.Data); herr == nil {
			t.add(traceRec{dir: 'R', t0: t0, t1: t1, peer: h.From, seq: h.Seq, typ: h.Type, len: len(p.Data)})
			t.items('R', h, p.Data, h.From)
		}
	}
	return p, err
}

func (t *tracer) Send(to node.ID, frame []byte) error {
	t0 := time.Now().UnixNano()
	if h, err := wire.ParseHeader(frame); err == nil {
		t.add(traceRec{dir: 'S', t0: t0, peer: to, seq: h.Seq, typ: h.Type, len: len(frame)})
		t.items('S', h, frame, to)
	}
	return t.Transport.Send(to, frame)
}

func (t *tracer) add(r traceRec) {
	t.mu.Lock()
	t.recs = append(t.recs, r)
	t.mu.Unlock()
}

// items records the bench messages of an unsealed data frame (or of a
// TOTEM token that carries its successor's copies).
func (t *tracer) items(kind byte, h wire.Header, frame []byte, peer node.ID) {
	if h.Sealed || h.Family != wire.FamilyMcast || (h.Type != uint8(group.MsgData) && h.Type != uint8(group.MsgToken)) {
		return
	}
	m, err := group.Codec{}.Unmarshal(h.Type, frame[wire.HeaderSize:])
	if err != nil {
		return
	}
	t.mu.Lock()
	for _, it := range m.Items {
		if len(it.Payload) >= BenchHeader {
			seq, sent, _ := benchCheck(it.Payload)
			t.msgs = append(t.msgs, traceMsg{kind: kind, from: peer, seq: h.Seq, sender: it.Sender, bseq: seq, t: int64(sent)})
		}
	}
	t.mu.Unlock()
}

// delivered records a delivery the bench saw.
func (t *tracer) delivered(sender node.ID, payload []byte) {
	now := time.Now().UnixNano()
	if len(payload) < BenchHeader {
		return
	}
	seq, _, _ := benchCheck(payload)
	t.mu.Lock()
	t.msgs = append(t.msgs, traceMsg{kind: 'V', sender: sender, bseq: seq, t: now})
	t.mu.Unlock()
}

// write saves the trace to file.
func (t *tracer) write(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	t.mu.Lock()
	for _, r := range t.recs {
		if r.dir == 'R' {
			fmt.Fprintf(w, "R %d %d %d %d %d %d\n", r.t0, r.t1, r.peer, r.seq, r.typ, r.len)
		} else {
			fmt.Fprintf(w, "S %d %d %d %d %d\n", r.t0, r.peer, r.seq, r.typ, r.len)
		}
	}
	for _, m := range t.msgs {
		if m.kind == 'V' {
			fmt.Fprintf(w, "V %d %d %d\n", m.t, m.sender, m.bseq)
		} else {
			fmt.Fprintf(w, "M %c %d %d %d %d %d\n", m.kind, m.from, m.seq, m.sender, m.bseq, m.t)
		}
	}
	t.mu.Unlock()
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
