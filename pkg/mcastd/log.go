package mcastd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// ReadLog reads one member's --json log: the member, its records, and
// whether it ended cleanly (its last line is 'exit').
func ReadLog(file string) (node.ID, []mcast.Record, bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, nil, false, err
	}
	defer f.Close()
	var (
		id    node.ID
		recs  []mcast.Record
		clean bool
	)
	lines, err := readLines(f)
	if err != nil {
		return 0, nil, false, err
	}
	for i, line := range lines {
		n := i + 1
		var l LogLine
		if err := json.Unmarshal(line, &l); err != nil {
			if n == len(lines) {
				break // a last line cut short by a crash
			}
			return 0, nil, false, fmt.Errorf("line %d: %v", n, err)
		}
		if l.Member == node.None || id != node.None && l.Member != id {
			return 0, nil, false, fmt.Errorf("line %d: member %d in a log of member %d", n, l.Member, id)
		}
		id = l.Member
		pl := []byte(nil)
		if l.Payload != nil {
			pl = []byte(*l.Payload)
		}
		switch l.Event {
		case "send":
			recs = append(recs, mcast.Record{Send: true, Seq: l.Seq, Payload: pl, Line: n})
		case "deliver":
			recs = append(recs, mcast.Record{Sender: l.Sender, Seq: l.Seq, Payload: pl, Line: n})
		case "exit":
			clean = true
		default:
			return 0, nil, false, fmt.Errorf("line %d: unknown event %q", n, l.Event)
		}
	}
	if id == node.None {
		return 0, nil, false, errors.New("no member in this log")
	}
	return id, recs, clean, nil
}

// readLines reads a log's lines (up to 1 MiB each).
func readLines(r io.Reader) ([][]byte, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var lines [][]byte
	for sc.Scan() {
		lines = append(lines, slices.Clone(sc.Bytes()))
	}
	return lines, sc.Err()
}
