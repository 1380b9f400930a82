package lockd

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/claim"
	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mutex"
)

// memberStatus is a daemon's status reply: its machine's Status with the
// cluster's lock table (see daemon.status).
type memberStatus struct {
	ID          uint32             `json:"id"`
	Algo        string             `json:"algo"`
	Quorum      *bool              `json:"quorum"`
	Coordinator uint32             `json:"coordinator"`
	Term        uint64             `json:"term"`
	Clock       uint64             `json:"clock"`
	Token       string             `json:"token"`
	Count       uint64             `json:"count"`
	Holder      uint32             `json:"holder"`
	K           int                `json:"k"`
	M           int                `json:"m"`
	Counter     uint64             `json:"counter"`
	Votes       map[string]uint32  `json:"votes"`
	Locks       []mutex.LockStatus `json:"locks"`
	LocksFrom   string             `json:"locks_from"`
	Unanswered  []uint32           `json:"unanswered"`
	Down        []uint32           `json:"down"`
	raw         json.RawMessage
}

// statusWait bounds the wait for a daemon's status: a paused daemon must
// not hold up a client (the daemon asks other members for at most 250 ms).
const statusWait = 2 * time.Second

// status asks the daemon at socket for its status.
func status(socket string) (*memberStatus, error) { return statusWithin(socket, statusWait) }

// statusWithin asks the daemon at socket for its status, waiting at most
// wait for the answer.
func statusWithin(socket string, wait time.Duration) (*memberStatus, error) {
	r, err := claim.Query[Reply](Tool, socket, Request{Op: "status"}, wait)
	if err != nil {
		return nil, err
	}
	if r.Event != "status" {
		return nil, cli.Exitf(cli.ExitUnavailable, "the daemon at %s did not answer", socket)
	}
	st := &memberStatus{raw: r.Status}
	if err := json.Unmarshal(r.Status, st); err != nil {
		return nil, cli.Exitf(cli.ExitUnavailable, "bad status from the daemon: %v", err)
	}
	return st, nil
}

// Status is 'lockd status': the member's state in one line, then one line
// per lock of the cluster; exit 69 while a central member has no
// coordinator.
func Status(socket string, out *cli.Output) error {
	st, err := status(socket)
	if err != nil {
		return err
	}
	if out.IsJSON() {
		var m map[string]any
		if json.Unmarshal(st.raw, &m) != nil {
			return cli.Exitf(cli.ExitUnavailable, "bad status from the daemon")
		}
		m["event"] = "status"
		out.JSON(m)
	} else {
		out.Line(st.head())
		for _, l := range st.Locks {
			line := "lock " + l.Name
			if l.Holder != 0 {
				line += fmt.Sprintf(" holder %d/%d token %d", l.Holder, l.Client, l.Token)
			} else {
				line += " free"
			}
			if len(l.Queue) > 0 {
				line += fmt.Sprintf(" queue %v", l.Queue)
			}
			out.Line(line)
		}
	}
	if st.Algo == "central" && st.Coordinator == 0 {
		return cli.Exitf(cli.ExitUnavailable, "no coordinator yet")
	}
	return nil
}

// head is the status's first line: the member and its algorithm's state.
func (st *memberStatus) head() string {
	head := fmt.Sprintf("daemon %d algo %s", st.ID, st.Algo)
	if st.Quorum != nil {
		head += map[bool]string{true: " quorum yes", false: " quorum no"}[*st.Quorum]
	}
	switch st.Algo {
	case "central":
		head += fmt.Sprintf(" coordinator %d term %d", st.Coordinator, st.Term)
		if st.LocksFrom == "last ping" {
			head += " (locks as of its last ping)" // the coordinator did not answer in time
		}
	case "ricart-agrawala":
		head += fmt.Sprintf(" clock %d", st.Clock)
	case "token-ring":
		head += fmt.Sprintf(" copy %s count %d holder %d k %d", st.Token, st.Count, st.Holder, st.K)
	case "voting":
		head += fmt.Sprintf(" m %d counter %d", st.M, st.Counter)
		names := make([]string, 0, len(st.Votes))
		for n := range st.Votes {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			head += fmt.Sprintf(" vote %s→%d", n, st.Votes[n])
		}
	}
	if len(st.Unanswered) == 0 {
		return head
	}
	// Their clients' holdings are missing from the lock lines: the members
	// that did not answer, and those held for dead (not asked).
	var silent, dead []string
	for _, id := range st.Unanswered {
		if slices.Contains(st.Down, id) {
			dead = append(dead, strconv.FormatUint(uint64(id), 10))
		} else {
			silent = append(silent, strconv.FormatUint(uint64(id), 10))
		}
	}
	var why []string
	if len(silent) > 0 {
		why = append(why, "no answer from member "+strings.Join(silent, ", "))
	}
	if len(dead) == 1 {
		why = append(why, "member "+dead[0]+" down")
	} else if len(dead) > 1 {
		why = append(why, "members "+strings.Join(dead, ", ")+" down")
	}
	return head + " (" + strings.Join(why, "; ") + ")"
}

// watching is the daemon's acknowledgement of a watcher (never printed).
const watching = "watching"

// Watch is 'lockd watch': this member's clients' events (with cluster,
// every member's, each marked with its member) until the daemon goes away.
//
// readyFile, when set, is written (with the socket's path) once the
// daemon has registered the watcher.
func Watch(socket string, cluster bool, readyFile string, out *cli.Output) error {
	c, err := dial(socket)
	if err != nil {
		return err
	}
	defer c.close()
	op := "watch"
	if cluster {
		op = "watch-cluster"
	}
	if err := c.send(Request{Op: op}); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "%v", err)
	}
	for r := range c.replies {
		if r.Event == "valid" {
			continue
		}
		if r.Event == watching {
			if readyFile != "" {
				if err := cli.WriteReadyFile(readyFile, socket); err != nil {
					return cli.Exitf(cli.ExitUsage, "--ready-file: %v", err)
				}
			}
			continue
		}
		if r.Node != 0 && !out.IsJSON() {
			out.Line(fmt.Sprintf("member %d %s", r.Node, r))
			continue
		}
		Print(out, r)
	}
	return cli.Exitf(cli.ExitUnavailable, "the daemon went away")
}
