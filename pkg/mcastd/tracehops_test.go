package mcastd

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// A TOTEM hop, taken apart from the frame traces of every member of one
// run (TraceEnv): the holder's sendto of the token, then at its
// successor the frames read before the token (Ahead, the time they took
// counted from the token's sendto: Busy), the token's own read (Wake:
// from the later of its sendto and the Recv call to Recv's return, the
// kernel's hop and the reader's wake-up), and the successor's hold: its
// first sendto (Step: decoding, the machine's step, sealing), its data
// copies (Copies) and the sendto of the token it passes on (Hold).
type hop struct {
	Busy, Wake, Step, Hold int64 // ns
	Ahead, Copies          int
}

type traceLine struct {
	dir     byte
	t0, t1  int64
	peer    node.ID
	seq     uint64
	typ     uint8
	members node.ID // the trace's own member
}

// traceMsgLine is an M or V line of a trace (traceMsg), at member self.
type traceMsgLine struct {
	traceMsg
	self node.ID
}

func readTrace(file string, self node.ID) ([]traceLine, []traceMsgLine, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var out []traceLine
	var msgs []traceMsgLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		n := make([]int64, len(fs))
		for i := 1; i < len(fs); i++ {
			if fs[0] == "M" && i == 1 {
				continue
			}
			v, err := strconv.ParseUint(fs[i], 10, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %q: %v", file, sc.Text(), err)
			}
			n[i] = int64(v)
		}
		switch {
		case fs[0] == "M" && len(fs) == 7:
			msgs = append(msgs, traceMsgLine{traceMsg{kind: fs[1][0], from: node.ID(n[2]), seq: uint64(n[3]), sender: node.ID(n[4]), bseq: uint64(n[5]), t: n[6]}, self})
		case fs[0] == "V" && len(fs) == 4:
			msgs = append(msgs, traceMsgLine{traceMsg{kind: 'V', t: n[1], sender: node.ID(n[2]), bseq: uint64(n[3])}, self})
		case fs[0] == "R" && len(fs) == 7:
			out = append(out, traceLine{dir: 'R', t0: n[1], t1: n[2], peer: node.ID(n[3]), seq: uint64(n[4]), typ: uint8(n[5]), members: self})
		case fs[0] == "S" && len(fs) == 6:
			out = append(out, traceLine{dir: 'S', t0: n[1], t1: n[1], peer: node.ID(n[2]), seq: uint64(n[3]), typ: uint8(n[4]), members: self})
		default:
			return nil, nil, fmt.Errorf("%s: %q", file, sc.Text())
		}
	}
	return out, msgs, sc.Err()
}

// msgPath takes every bench message's way apart, in µs medians: from its
// send stamp to the first sendto of a frame that carries it (Wait: the
// request's way into the machine and the wait for the token), that
// frame's sendto to its read at each other member (Hop), that read to
// the bench's delivery there (Deliver: the machine's step, the event's
// way to the bench), and the whole at the other members and at the
// sender itself (Total, Own).
func msgPath(traces [][]traceLine, msgs []traceMsgLine) string {
	type fkey struct {
		from node.ID
		seq  uint64
	}
	type mkey struct {
		sender node.ID
		bseq   uint64
	}
	type akey struct {
		at node.ID
		m  mkey
	}
	sendAt, readAt := map[fkey]int64{}, map[akey]int64{}
	for i, tr := range traces {
		for _, l := range tr {
			if l.dir == 'S' {
				sendAt[fkey{node.ID(i + 1), l.seq}] = l.t0
			}
		}
	}
	readFrame := map[akey]fkey{}
	lines := map[fkey]int64{} // reads, by (reader, frame) below
	for i, tr := range traces {
		for _, l := range tr {
			if l.dir == 'R' {
				lines[fkey{node.ID(i + 1), uint64(l.peer)<<40 | l.seq}] = l.t1
			}
		}
	}
	stamp, first := map[mkey]int64{}, map[mkey]int64{}
	deliv := map[akey]int64{}
	for _, m := range msgs {
		k := mkey{m.sender, m.bseq}
		switch m.kind {
		case 'S':
			stamp[k] = m.t
			if t, ok := sendAt[fkey{m.self, m.seq}]; ok && (first[k] == 0 || t < first[k]) {
				first[k] = t
			}
		case 'R':
			a := akey{m.self, k}
			if t, ok := lines[fkey{m.self, uint64(m.from)<<40 | m.seq}]; ok && (readAt[a] == 0 || t < readAt[a]) {
				readAt[a], readFrame[a] = t, fkey{m.from, m.seq}
			}
		case 'V':
			deliv[akey{m.self, k}] = m.t
		}
	}
	var wait, hop, dl, total, own []int64
	for a, d := range deliv {
		st, ok := stamp[a.m]
		if !ok {
			continue
		}
		if a.at == a.m.sender {
			own = append(own, d-st)
			wait = append(wait, first[a.m]-st)
			continue
		}
		r, ok := readAt[a]
		if !ok {
			continue
		}
		total = append(total, d-st)
		hop = append(hop, r-sendAt[readFrame[a]])
		dl = append(dl, d-r)
	}
	us := func(v []int64) float64 { return float64(median(v)) / 1e3 }
	return fmt.Sprintf("%d deliveries; medians (µs): at the other members %.1f, at the sender %.1f; stamp to the first copy's sendto %.1f; a copy's sendto to its read %.1f; read to delivered %.1f",
		len(total)+len(own), us(total), us(own), us(wait), us(hop), us(dl))
}

// traceHops takes every token hop apart; traces[i] is member i+1's. Only
// hops while data flows count (between the first and the last data frame
// sent by anyone).
func traceHops(traces [][]traceLine) []hop {
	type key struct {
		from node.ID
		seq  uint64
	}
	sent := map[key]int64{}
	first, last := int64(1<<62), int64(0)
	for i, tr := range traces {
		for _, l := range tr {
			if l.dir == 'S' {
				sent[key{node.ID(i + 1), l.seq}] = l.t0
				if l.typ == uint8(group.MsgData) {
					first, last = min(first, l.t0), max(last, l.t0)
				}
			}
		}
	}
	var hops []hop
	for _, tr := range traces {
		for k, l := range tr {
			if l.dir != 'R' || l.typ != uint8(group.MsgToken) {
				continue
			}
			ts, ok := sent[key{l.peer, l.seq}]
			if !ok || ts < first || ts > last {
				continue
			}
			h := hop{Busy: max(l.t0, ts) - ts, Wake: l.t1 - max(l.t0, ts)}
			for j := k - 1; j >= 0 && tr[j].t1 > ts; j-- {
				if tr[j].dir == 'R' {
					h.Ahead++
				}
			}
			h.Step = -1
			for j := k + 1; j < len(tr); j++ {
				if tr[j].dir != 'S' {
					continue
				}
				if h.Step < 0 {
					h.Step = tr[j].t0 - l.t1
				}
				if tr[j].typ == uint8(group.MsgToken) {
					h.Hold = tr[j].t0 - l.t1
					break
				}
				if tr[j].typ == uint8(group.MsgData) {
					h.Copies++
				}
			}
			if h.Step >= 0 && h.Hold > 0 {
				hops = append(hops, h)
			}
		}
	}
	return hops
}

func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// hopReport is the means of each part of a hop (they add up to the
// mean hop, and n of them to the mean rotation) and the median and 90th
// percentile of the whole, in µs.
func hopReport(hops []hop) string {
	n := float64(max(len(hops), 1))
	var busy, wake, step, hold, ahead, copies float64
	whole := make([]int64, len(hops))
	for i, h := range hops {
		busy += float64(h.Busy) / n / 1e3
		wake += float64(h.Wake) / n / 1e3
		step += float64(h.Step) / n / 1e3
		hold += float64(h.Hold) / n / 1e3
		ahead += float64(h.Ahead) / n
		copies += float64(h.Copies) / n
		whole[i] = h.Busy + h.Wake + h.Hold
	}
	slices.Sort(whole)
	pct := func(p float64) float64 {
		if len(whole) == 0 {
			return 0
		}
		return float64(whole[int(p*float64(len(whole)-1))]) / 1e3
	}
	return fmt.Sprintf("%d hops; means (µs): hop %.1f = busy before the read %.1f (frames read ahead %.2f) + read %.1f + hold %.1f (first sendto after %.1f; data copies %.2f); hop p50 %.1f p90 %.1f p99 %.1f",
		len(hops), busy+wake+hold, busy, ahead, wake, hold, step, copies, pct(0.5), pct(0.9), pct(0.99))
}

func TestTraceHops(t *testing.T) {
	// Member 1 passes the token (seq 7) at 1,000 ns; member 2 reads a
	// data frame of member 3 first, then the token, then sends one data
	// copy and passes the token on.
	d := uint8(group.MsgData)
	tk := uint8(group.MsgToken)
	traces := [][]traceLine{
		{{dir: 'S', t0: 500, peer: 2, seq: 6, typ: d}, {dir: 'S', t0: 1000, peer: 2, seq: 7, typ: tk}},
		{{dir: 'R', t0: 900, t1: 1500, peer: 3, seq: 1, typ: d}, {dir: 'R', t0: 1600, t1: 1700, peer: 1, seq: 7, typ: tk},
			{dir: 'S', t0: 1900, peer: 3, seq: 1, typ: d}, {dir: 'S', t0: 2000, peer: 3, seq: 2, typ: tk}},
		{{dir: 'S', t0: 800, peer: 2, seq: 1, typ: d}, {dir: 'S', t0: 3000, peer: 1, seq: 9, typ: d}},
	}
	got := traceHops(traces)
	want := []hop{{Busy: 600, Wake: 100, Step: 200, Hold: 300, Ahead: 1, Copies: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("hops %+v, want %+v", got, want)
	}
}

// TestTraceHopsReport reads the traces of one `mcast bench` run
// (MCAST_BENCH_TRACE=DIR/trace.<id> for every member), when
// MCAST_TRACE_DIR names their directory, and prints the hop's parts.
func TestTraceHopsReport(t *testing.T) {
	dir := os.Getenv("MCAST_TRACE_DIR")
	if dir == "" {
		t.Skip("MCAST_TRACE_DIR unset: no traces to read")
	}
	var traces [][]traceLine
	var msgs []traceMsgLine
	for i := 1; ; i++ {
		file := filepath.Join(dir, fmt.Sprintf("trace.%d", i))
		if _, err := os.Stat(file); err != nil {
			break
		}
		tr, ms, err := readTrace(file, node.ID(i))
		if err != nil {
			t.Fatal(err)
		}
		traces, msgs = append(traces, tr), append(msgs, ms...)
	}
	t.Logf("%d members: %s", len(traces), hopReport(traceHops(traces)))
	t.Logf("%d members: %s", len(traces), msgPath(traces, msgs))
}
