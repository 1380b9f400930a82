package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/cmd/lockd/internal/ctl"
	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mutex"
)

// dial connects to the local daemon; exit 69 when nobody serves the socket.
func dial(c *ucli.Context) (*ctl.Conn, error) { return ctl.Dial(c.String("socket")) }

// waitOptsFrom reads the flags of the commands that wait for a lock.
func waitOptsFrom(c *ucli.Context) ctl.WaitOpts {
	return ctl.WaitOpts{Socket: c.String("socket"), Timeout: c.Duration("timeout"), NonBlock: c.Bool("nonblock"), Conflict: c.Int("conflict-exit-code")}
}

func validName(c *ucli.Context) (string, error) { return ctl.CheckName(c.Args().Slice()) }

func runCmd(c *ucli.Context) error {
	return ctl.Run(ctl.RunOpts{WaitOpts: waitOptsFrom(c), KillGrace: c.Duration("kill-grace"), Shell: c.Bool("shell"), Args: c.Args().Slice()})
}

// hold acquires NAME, prints it, and holds until stdin closes or a signal.
func holdCmd(c *ucli.Context) error {
	name, err := validName(c)
	if err != nil {
		return err
	}
	jsonOut := c.Bool(cli.FlagJSON)
	out := cli.NewOutput(os.Stdout, jsonOut)
	last, err := ctl.Hold(waitOptsFrom(c), name, func(got ctl.Reply) { emit(out, jsonOut, got) })
	if last.Event != "" {
		emit(out, jsonOut, last)
	}
	return err
}

func emit(out *cli.Output, jsonOut bool, r ctl.Reply) {
	if jsonOut {
		out.JSON(r)
	} else {
		out.Line(r.String())
	}
}

func statusCmd(c *ucli.Context) error {
	cn, err := dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	if err := cn.Send(ctl.Request{Op: "status"}); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "%v", err)
	}
	var r ctl.Reply
	if err := cn.Next(&r); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "%v", err)
	}
	out := cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON))
	if c.Bool(cli.FlagJSON) {
		out.Line(string(r.Status))
		return nil
	}
	var st struct {
		ID          uint32             `json:"id"`
		Algo        string             `json:"algo"`
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
	}
	if err := json.Unmarshal(r.Status, &st); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "bad status from the daemon: %v", err)
	}
	head := fmt.Sprintf("daemon %d algo %s", st.ID, st.Algo)
	switch st.Algo {
	case "central":
		head += fmt.Sprintf(" coordinator %d term %d", st.Coordinator, st.Term)
		if st.LocksFrom == "last ping" {
			// The coordinator did not answer in time.
			head += " (locks as of its last ping)"
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
		sort.Strings(names)
		for _, n := range names {
			head += fmt.Sprintf(" vote %s→%d", n, st.Votes[n])
		}
	}
	if len(st.Unanswered) > 0 {
		// Their clients' holdings are missing from the list below: the
		// members that did not answer, and those held for dead (not asked).
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
		if len(dead) > 0 {
			word := "member "
			if len(dead) > 1 {
				word = "members "
			}
			why = append(why, word+strings.Join(dead, ", ")+" down")
		}
		head += " (" + strings.Join(why, "; ") + ")"
	}
	out.Line(head)
	for _, l := range st.Locks {
		line := fmt.Sprintf("lock %s", l.Name)
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
	if st.Algo == "central" && st.Coordinator == 0 {
		return cli.Exitf(cli.ExitUnavailable, "no coordinator yet")
	}
	return nil
}

func watchCmd(c *ucli.Context) error {
	cn, err := dial(c)
	if err != nil {
		return err
	}
	defer cn.Close()
	op := "watch"
	if c.Bool("cluster") {
		op = "watch-cluster"
	}
	if err := cn.Send(ctl.Request{Op: op}); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "%v", err)
	}
	out := cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON))
	for {
		var r ctl.Reply
		if err := cn.Next(&r); err != nil {
			return cli.Exitf(cli.ExitUnavailable, "the daemon went away")
		}
		if r.Event == "valid" {
			continue
		}
		if r.Node != 0 && !c.Bool(cli.FlagJSON) {
			out.Line(fmt.Sprintf("member %d %s", r.Node, r))
			continue
		}
		emit(out, c.Bool(cli.FlagJSON), r)
	}
}
