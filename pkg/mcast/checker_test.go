package mcast

import (
	"errors"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
)

func send(seq uint64, p string) Record { return Record{Send: true, Seq: seq, Payload: []byte(p)} }
func dlv(from node.ID, seq uint64, p string) Record {
	return Record{Sender: from, Seq: seq, Payload: []byte(p)}
}

// TestCheckSmallestCounterexample: a run with several violations; Check
// reports the one shown by the fewest log lines, with exactly those lines.
func TestCheckSmallestCounterexample(t *testing.T) {
	logs := map[node.ID][]Record{
		1: {send(1, "q"), dlv(2, 1, "a")},
		2: {dlv(1, 1, "q"), send(1, "a")},
		// 3 delivers the answer before the question (causal), and never
		// gets 1/1 at all (agreement too).
		3: {dlv(2, 1, "a")},
	}
	err := Check(Causal, logs, nil)
	var v *Violation
	if !errors.As(err, &v) {
		t.Fatalf("Check: %v, want a *Violation", err)
	}
	// Agreement (one line and one absence) is smaller than causal (the
	// dependency, the send, the delivery, the absence).
	if !strings.HasPrefix(v.Text, "agreement: member 1 delivered 1/1, member 3 did not") || len(v.Evidence) != 2 || v.Found != 3 {
		t.Fatalf("got %d evidence lines of %d violations:\n%s", len(v.Evidence), v.Found, v.Detail())
	}
	if v.Evidence[0] != (Evidence{1, 1, "deliver 1/1"}) || v.Evidence[1].Line != 0 {
		t.Fatalf("evidence:\n%s", v.Detail())
	}
	// Without member 3's crash excused and with only the causal slip left,
	// the causal counterexample names the four lines.
	logs[3] = []Record{dlv(2, 1, "a"), dlv(1, 1, "q")}
	err = Check(Causal, logs, nil)
	if !errors.As(err, &v) || !strings.HasPrefix(v.Text, "causal: member 3 delivered 2/1 before 1/1") {
		t.Fatalf("Check: %v", err)
	}
	want := []Evidence{{2, 1, "deliver 1/1"}, {2, 2, "send 1"}, {3, 1, "deliver 2/1"}, {3, 2, "deliver 1/1 (later)"}}
	if len(v.Evidence) != len(want) {
		t.Fatalf("evidence:\n%s", v.Detail())
	}
	for i := range want {
		if v.Evidence[i] != want[i] {
			t.Fatalf("evidence %d: %v, want %v\n%s", i, v.Evidence[i], want[i], v.Detail())
		}
	}
	// The same logs are fine as FIFO.
	if err := Check(FIFO, logs, nil); err != nil {
		t.Fatalf("FIFO: %v", err)
	}
}

// TestCheckFindsEachKind: one log set per violation kind, each caught with
// its evidence.
func TestCheckFindsEachKind(t *testing.T) {
	for _, c := range []struct {
		name  string
		order Order
		logs  map[node.ID][]Record
		want  string
		lines int
	}{
		{"invented", Unordered, map[node.ID][]Record{1: {}, 2: {dlv(1, 1, "x")}}, "integrity: member 2 delivered 1/1, which 1 never sent", 1},
		{"altered", Unordered, map[node.ID][]Record{1: {send(1, "x")}, 2: {dlv(1, 1, "y")}}, "integrity: member 2 delivered 1/1 with a payload", 2},
		{"twice", Unordered, map[node.ID][]Record{1: {send(1, "x")}, 2: {dlv(1, 1, "x"), dlv(1, 1, "x")}}, "integrity: member 2 delivered 1/1 twice", 2},
		{"fifo gap", FIFO, map[node.ID][]Record{1: {send(1, "x"), send(2, "y")}, 2: {dlv(1, 2, "y"), dlv(1, 1, "x")}}, "fifo: member 2 delivered 1/2 after 1/0", 4},
		{"lost", Unordered, map[node.ID][]Record{1: {send(1, "x")}, 2: {}}, "agreement: member 1 delivered 1/1, member 2 did not", 2},
	} {
		err := Check(c.order, c.logs, nil)
		var v *Violation
		if !errors.As(err, &v) || !strings.HasPrefix(v.Text, c.want) || len(v.Evidence) != c.lines {
			t.Errorf("%s: %v (want %q with %d lines)", c.name, err, c.want, c.lines)
			if v != nil {
				t.Log(v.Detail())
			}
		}
	}
}
