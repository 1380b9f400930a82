package mcast

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Record is one line of a member's log: one of its own sends (Send), or a
// delivery of another member's message.
type Record struct {
	Send    bool
	Sender  node.ID // deliveries
	Seq     uint64
	Payload []byte
	// Line is the record's line in its log file (0: its position among
	// the member's records, counting from 1).
	Line int
}

type msgID struct {
	sender node.ID
	seq    uint64
}

// Evidence is one log line of a counterexample, or (Line 0) the absence of
// a line from a member's log.
type Evidence struct {
	Member node.ID
	Line   int
	What   string
}

func (e Evidence) String() string {
	if e.Line == 0 {
		return fmt.Sprintf("member %d: %s", e.Member, e.What)
	}
	return fmt.Sprintf("member %d line %d: %s", e.Member, e.Line, e.What)
}

// Violation is a counterexample: what is broken, and the fewest log lines
// that show it.
type Violation struct {
	Text     string
	Evidence []Evidence
	// Found is how many violations the run had in all; this one is the
	// smallest (fewest lines of evidence, then the earliest).
	Found int
}

func (v *Violation) Error() string { return v.Text }

// Detail is the violation with its evidence, one line each.
func (v *Violation) Detail() string {
	var b strings.Builder
	b.WriteString(v.Text)
	for _, e := range v.Evidence {
		b.WriteString("\n  " + e.String())
	}
	if v.Found > 1 {
		fmt.Fprintf(&b, "\n(the smallest of %d violations)", v.Found)
	}
	return b.String()
}

// maxViolations bounds what Check collects before choosing the smallest.
const maxViolations = 10000

// Check judges a run from every member's log (its sends and deliveries in
// the order they happened there). It checks, for every member, integrity
// (each message delivered at most once, only as its sender sent it) and,
// with FIFO and causal order, the order; and agreement among the members
// not in crashed (what one delivered, all delivered; a member's own sends
// count as its deliveries, which is validity). Happens-before is rebuilt
// from the logs, not taken from the messages' timestamps: m → m' when the
// sender of m' had sent or delivered m before sending m'. A failure is a
// *Violation: the smallest counterexample found (the fewest log lines that
// show it), with those lines.
func Check(order Order, logs map[node.ID][]Record, crashed map[node.ID]bool) error {
	members := slices.Sorted(func(yield func(node.ID) bool) {
		for id := range logs {
			if !yield(id) {
				return
			}
		}
	})
	pos := map[node.ID]int{}
	for i, id := range members {
		pos[id] = i
	}
	line := func(id node.ID, i int) int {
		if l := logs[id][i].Line; l > 0 {
			return l
		}
		return i + 1
	}
	var found []*Violation
	report := func(v *Violation) bool {
		found = append(found, v)
		return len(found) < maxViolations
	}
	sent := map[msgID][]byte{}
	sentAt := map[msgID]int{}      // the send's line in its sender's log
	deps := map[msgID][]uint64{}   // causal past of each message, per member
	reach := map[node.ID][][]int{} // reach[id][j][v−1]: the line of id's log where its count of j's messages reached v
	for _, id := range members {
		count := make([]uint64, len(members))
		reach[id] = make([][]int, len(members))
		var seq uint64
		for i, r := range logs[id] {
			if r.Send {
				seq++
				if r.Seq != seq {
					return &Violation{Text: fmt.Sprintf("member %d's sends are numbered %d after %d", id, r.Seq, seq-1),
						Evidence: []Evidence{{id, line(id, i), fmt.Sprintf("send %d", r.Seq)}}, Found: 1}
				}
				count[pos[id]] = seq
				reach[id][pos[id]] = append(reach[id][pos[id]], line(id, i))
				sent[msgID{id, seq}] = r.Payload
				sentAt[msgID{id, seq}] = line(id, i)
				deps[msgID{id, seq}] = slices.Clone(count)
				continue
			}
			if j, ok := pos[r.Sender]; ok {
				count[j]++
				reach[id][j] = append(reach[id][j], line(id, i))
			}
		}
	}
	has := map[node.ID]map[msgID]int{} // the line of each delivery (or own send)
	for _, id := range members {
		got := map[msgID]int{}
		for i, r := range logs[id] {
			k := msgID{r.Sender, r.Seq}
			if r.Send {
				k = msgID{id, r.Seq}
			}
			if _, ok := got[k]; !ok {
				got[k] = line(id, i)
			}
		}
		has[id] = got
	}
	dl := func(k msgID) string { return fmt.Sprintf("deliver %d/%d", k.sender, k.seq) }
	later := func(id node.ID, k msgID, after int) Evidence {
		if l, ok := has[id][k]; ok && l > after {
			return Evidence{id, l, dl(k) + " (later)"}
		}
		return Evidence{id, 0, fmt.Sprintf("never delivers %d/%d", k.sender, k.seq)}
	}
members:
	for _, id := range members {
		got := map[msgID]int{}
		count := make([]uint64, len(members))
		for i, r := range logs[id] {
			if r.Send {
				got[msgID{id, r.Seq}] = line(id, i)
				count[pos[id]] = r.Seq
				continue
			}
			k := msgID{r.Sender, r.Seq}
			at := line(id, i)
			p, ok := sent[k]
			switch {
			case !ok:
				if !report(&Violation{Text: fmt.Sprintf("integrity: member %d delivered %d/%d, which %d never sent", id, r.Sender, r.Seq, r.Sender),
					Evidence: []Evidence{{id, at, dl(k)}}}) {
					break members
				}
				continue
			case !bytes.Equal(p, r.Payload):
				if !report(&Violation{Text: fmt.Sprintf("integrity: member %d delivered %d/%d with a payload %d did not send", id, r.Sender, r.Seq, r.Sender),
					Evidence: []Evidence{{r.Sender, sentAt[k], fmt.Sprintf("send %d %q", r.Seq, p)}, {id, at, fmt.Sprintf("%s %q", dl(k), r.Payload)}}}) {
					break members
				}
				continue
			case got[k] != 0:
				if !report(&Violation{Text: fmt.Sprintf("integrity: member %d delivered %d/%d twice", id, r.Sender, r.Seq),
					Evidence: []Evidence{{id, got[k], dl(k)}, {id, at, dl(k) + " again"}}}) {
					break members
				}
				continue
			case r.Sender == id:
				if !report(&Violation{Text: fmt.Sprintf("integrity: member %d delivered its own %d as another's", id, r.Seq),
					Evidence: []Evidence{{id, at, dl(k)}}}) {
					break members
				}
				continue
			}
			s := pos[r.Sender]
			if order >= FIFO && r.Seq != count[s]+1 {
				miss := msgID{r.Sender, count[s] + 1}
				ev := []Evidence{{r.Sender, sentAt[miss], fmt.Sprintf("send %d", miss.seq)}, {r.Sender, sentAt[k], fmt.Sprintf("send %d", k.seq)},
					{id, at, dl(k)}, later(id, miss, at)}
				if r.Seq <= count[s] {
					newer := msgID{r.Sender, count[s]}
					ev = []Evidence{{r.Sender, sentAt[k], fmt.Sprintf("send %d", k.seq)}, {r.Sender, sentAt[newer], fmt.Sprintf("send %d", newer.seq)},
						{id, has[id][newer], dl(newer)}, {id, at, dl(k)}}
				}
				if !report(&Violation{Text: fmt.Sprintf("fifo: member %d delivered %d/%d after %d/%d", id, r.Sender, r.Seq, r.Sender, count[s]), Evidence: ev}) {
					break members
				}
			}
			if order == Causal {
				for j, need := range deps[k] {
					if j != s && count[j] < need {
						dep := msgID{members[j], need}
						what := dl(dep)
						if members[j] == r.Sender {
							what = fmt.Sprintf("send %d", need)
						}
						ev := []Evidence{{r.Sender, reach[r.Sender][j][need-1], what}, {r.Sender, sentAt[k], fmt.Sprintf("send %d", k.seq)},
							{id, at, dl(k)}, later(id, dep, at)}
						if !report(&Violation{Text: fmt.Sprintf("causal: member %d delivered %d/%d before %d/%d, which %d had delivered or sent before sending it",
							id, r.Sender, r.Seq, members[j], need, r.Sender), Evidence: ev}) {
							break members
						}
						break
					}
				}
			}
			count[s] = max(count[s], r.Seq)
			got[k] = at
		}
	}
	if len(found) < maxViolations {
	agreement:
		for _, a := range members {
			if crashed[a] {
				continue
			}
			for _, k := range slices.SortedFunc(func(yield func(msgID) bool) {
				for k := range has[a] {
					if !yield(k) {
						return
					}
				}
			}, func(x, y msgID) int {
				if x.sender != y.sender {
					return int(x.sender) - int(y.sender)
				}
				return int(x.seq) - int(y.seq)
			}) {
				if _, ok := sent[k]; !ok {
					continue // reported under integrity
				}
				for _, b := range members {
					if _, ok := has[b][k]; !crashed[b] && !ok {
						if !report(&Violation{Text: fmt.Sprintf("agreement: member %d delivered %d/%d, member %d did not", a, k.sender, k.seq, b),
							Evidence: []Evidence{{a, has[a][k], dl(k)}, {b, 0, fmt.Sprintf("never delivers %d/%d", k.sender, k.seq)}}}) {
							break agreement
						}
					}
				}
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	// The smallest: the fewest lines of evidence, then the earliest line.
	first := func(v *Violation) int {
		m := 1 << 62
		for _, e := range v.Evidence {
			if e.Line > 0 {
				m = min(m, e.Line)
			}
		}
		return m
	}
	best := slices.MinFunc(found, func(a, b *Violation) int {
		if len(a.Evidence) != len(b.Evidence) {
			return len(a.Evidence) - len(b.Evidence)
		}
		return first(a) - first(b)
	})
	best.Found = len(found)
	return best
}
