package mcastd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"log/slog"
	"os"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Group is a pkg/mcast/group member behind a pipe: it prints
// deliveries (its own included, in the group's order) and views, and it
// leaves the group at the end of input or on the first SIGTERM.
type Group struct {
	Drv *driver.Driver[group.Msg]
	// ExitOnMinority: a member cut off with a minority of its view stops
	// (exit 69) instead of waiting for the majority to come back.
	ExitOnMinority bool
	// Log, when set, says on stderr why this member starts a new
	// incarnation (info).
	Log *slog.Logger
	room
	done   bool
	err    error
	lost   []group.LostEvent
	missed []group.MissedEvent
}

// Lost is the non-zero exit of a member the group went on without, some
// of whose messages the members that stay may lack, or which missed
// messages of its view that they delivered (nil: neither).
func (g *Group) Lost() error {
	if len(g.lost) > 0 {
		n := 0
		for _, e := range g.lost {
			n += len(e.Seqs)
		}
		return cli.Exitf(cli.ExitLost, "removed from the group with %d of its messages perhaps not delivered by the members that stay (first: %v)", n, g.lost[0])
	}
	if len(g.missed) > 0 {
		n := 0
		for _, e := range g.missed {
			n += len(e.Seqs)
		}
		if n == 0 {
			return cli.Exitf(cli.ExitLost, "removed from the group: %v", g.missed[0])
		}
		return cli.Exitf(cli.ExitLost, "removed from the group having missed %d messages the members that stay delivered (first: %v)", n, g.missed[0])
	}
	return nil
}

// Err is why the member must stop now (nil: it goes on).
func (g *Group) Err() error { return g.err }

// NewGroup wraps drv.
func NewGroup(drv *driver.Driver[group.Msg]) *Group {
	return &Group{Drv: drv, room: newRoom()}
}

// Submit sends a batch, waiting for a RoomEvent while the group lags.
func (g *Group) Submit(ctx context.Context, lines [][]byte) error {
	return g.submit(ctx, func() error {
		return g.Drv.Request(ctx, group.Msg{Type: group.MsgSend, Items: items(lines)})
	})
}

// Written reports what the writer wrote (GWritten).
func (g *Group) Written(ctx context.Context, cost uint64) error {
	return g.Drv.Request(ctx, group.Msg{Type: group.MsgWritten, Written: cost})
}

// End asks the group to let this member go.
func (g *Group) End(ctx context.Context) error {
	return g.Drv.Request(ctx, group.Msg{Type: group.MsgEnd})
}

// Leave is End on a signal: the member flushes and leaves like at the end
// of its input.
func (g *Group) Leave(ctx context.Context) error { return g.End(ctx) }

// Quit tells the group that this member stops now (GAbandon).
func (g *Group) Quit(ctx context.Context) error {
	return g.Drv.Request(ctx, group.Msg{Type: group.MsgAbandon})
}

// Quitted: the machine has quit (its DoneEvent).
func (g *Group) Quitted(ev node.Event) bool {
	_, ok := ev.(mcast.DoneEvent)
	return ok
}

// Handle prints deliveries, views and what happens to this member.
func (g *Group) Handle(ev node.Event, p *Printer) {
	switch ev := ev.(type) {
	case group.DeliverEvent:
		p.GroupDeliver(ev)
	case group.SendEvent:
		p.GroupSend(ev)
	case group.ViewEvent:
		p.View(ev)
	case group.TransitionalEvent:
		p.Transitional(ev)
	case group.MergeEvent:
		p.Merge(ev)
	case group.LeftEvent, group.RemovedEvent, group.MinorityEvent:
		p.Note(ev)
		if e, ok := ev.(group.RemovedEvent); ok && g.Log != nil {
			g.Log.Info("a new incarnation", "view", e.View, "inc", e.Inc, "cause", e.Cause)
		}
		if e, ok := ev.(group.MinorityEvent); ok && g.ExitOnMinority {
			g.err = cli.Exitf(cli.ExitUnavailable, "cut off with a minority of view %d (--exit-on-minority)", e.View)
		}
	case group.LostEvent:
		p.Note(ev)
		g.lost = append(g.lost, ev)
		fmt.Fprintf(os.Stderr, "mcast: %v\n", ev)
	case group.MissedEvent:
		p.Note(ev)
		g.missed = append(g.missed, ev)
		fmt.Fprintf(os.Stderr, "mcast: %v\n", ev)
	case mcast.RoomEvent:
		g.Room()
	case mcast.DoneEvent:
		g.done = true
	}
}

// Finished: the member has left the group.
func (g *Group) Finished(uint64) bool { return g.done }

// GroupDeliver prints a delivery: '<sender> <view>.<seq> <payload>' (seq
// counts the sender's messages in the view, so view and seq together name
// the message), or a JSON line with the view and the sender's
// incarnation.
func (p *Printer) GroupDeliver(ev group.DeliverEvent) {
	p.line(ev.Payload, true)
	if !p.out.IsJSON() {
		p.textView(ev.Sender, ev.View, ev.Seq, ev.Payload)
		return
	}
	pl := p.payload(ev.Payload)
	p.out.JSON(LogLine{Time: now(), Event: "deliver", Member: p.member, View: ev.View, Sender: ev.Sender, Inc: ev.Inc, Seq: ev.Seq, Payload: &pl})
}

// GroupSend records one of the member's own messages (JSON only: in text
// a member prints its own lines when it delivers them, in the group's
// order).
func (p *Printer) GroupSend(ev group.SendEvent) {
	if p.out.IsJSON() {
		p.lines++
		pl := p.payload(ev.Payload)
		p.out.JSON(LogLine{Time: now(), Event: "send", Member: p.member, View: ev.View, Inc: ev.Inc, Seq: ev.Seq, Payload: &pl})
	}
}

// View prints an installed view: 'view 7 members 1,2,4 joined 4 left 3'.
func (p *Printer) View(ev group.ViewEvent) {
	p.lines++
	if !p.out.IsJSON() {
		p.w.WriteString(ev.String())
		p.w.WriteByte('\n')
		return
	}
	p.out.JSON(LogLine{Time: now(), Event: "view", Member: p.member, View: ev.View, Leader: ev.Leader,
		Members: ev.Members, Joined: ev.Joined, Left: ev.Left})
}

// Transitional prints the start of a view's transitional configuration
// (--safe): 'transitional view 7 members 1,2'.
func (p *Printer) Transitional(ev group.TransitionalEvent) {
	p.lines++
	if !p.out.IsJSON() {
		p.w.WriteString(ev.String())
		p.w.WriteByte('\n')
		return
	}
	p.out.JSON(LogLine{Time: now(), Event: "transitional", Member: p.member, View: ev.View, Members: ev.Members})
}

// Merge prints a merge of components (--partitions evs): 'merge view 5
// members 4,5 into 1' (this side joins member 1's) or 'merge view 8
// members 1,2,3' (this side takes the other in with its next view).
func (p *Printer) Merge(ev group.MergeEvent) {
	p.lines++
	if !p.out.IsJSON() {
		p.w.WriteString(ev.String())
		p.w.WriteByte('\n')
		return
	}
	p.out.JSON(LogLine{Time: now(), Event: "merge", Member: p.member, View: ev.View, Members: ev.Members, Into: ev.Into, Inc: ev.Inc})
}

// Note prints what happened to this member: 'left view 8', 'removed from
// view 6', 'minority in view 5', its lost and missed messages.
func (p *Printer) Note(ev node.Event) {
	p.lines++
	if !p.out.IsJSON() {
		p.w.WriteString(ev.String())
		p.w.WriteByte('\n')
		return
	}
	l := LogLine{Time: now(), Event: ev.Kind(), Member: p.member}
	switch e := ev.(type) {
	case group.LeftEvent:
		l.View, l.Next = e.View, e.Leader
	case group.RemovedEvent:
		l.View, l.Inc, l.Cause = e.View, e.Inc, e.Cause
	case group.MinorityEvent:
		l.View = e.View
	case group.LostEvent:
		l.View, l.Inc, l.Seqs, l.Unknown = e.View, e.Inc, e.Seqs, e.Unknown
	case group.MissedEvent:
		l.View, l.Sender, l.Inc, l.Seqs, l.Unknown = e.View, e.Sender, e.Inc, e.Seqs, e.Unknown
	}
	p.out.JSON(l)
}

// ViewLog is one member process's --json log of a dynamic group, split
// into its incarnations (a member that was removed joins again as a new
// one).
type ViewLog struct {
	ID    node.ID
	Lives map[group.Member][]group.Record
	// Final is the incarnation that ended the run cleanly in a view
	// without leaving it (none when the log ends with leaving, or without
	// its 'exit' line).
	Final *group.Member
}

// ReadViewLog reads one member's 'mcast run --views --json' log.
func ReadViewLog(file string) (*ViewLog, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lines, err := readLines(f)
	if err != nil {
		return nil, err
	}
	vl := &ViewLog{Lives: map[group.Member][]group.Record{}}
	var (
		cur     group.Member // the incarnation, once its first view names it
		pending []group.Record
		inc     uint64 // the incarnation after a 'removed' line (0: learn from the view)
		clean   bool
		left    bool
		// the last view line: its number and its members' incarnations
		lastView uint64
		viewInc  map[node.ID]uint64
	)
	for i, line := range lines {
		n := i + 1
		var l LogLine
		if err := json.Unmarshal(line, &l); err != nil {
			if n == len(lines) {
				break // a last line cut short by a crash
			}
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if l.Member == node.None || vl.ID != node.None && l.Member != vl.ID {
			return nil, fmt.Errorf("line %d: member %d in a log of member %d", n, l.Member, vl.ID)
		}
		vl.ID = l.Member
		pl := []byte(nil)
		if l.Payload != nil {
			pl = []byte(*l.Payload)
		}
		var r group.Record
		switch l.Event {
		case "send":
			r = group.Record{Kind: group.VSend, View: l.View, Seq: l.Seq, Payload: pl, Line: n}
		case "deliver":
			r = group.Record{Kind: group.VDeliver, View: l.View, Sender: l.Sender, Seq: l.Seq, Payload: pl, Line: n}
			// A message's identity includes its sender's incarnation:
			// in the view it is delivered in, that is the sender's.
			if inc, ok := viewInc[l.Sender]; ok && l.Inc != 0 && l.View == lastView && inc != l.Inc {
				return nil, fmt.Errorf("line %d: delivery %d/%d from incarnation %d of member %d, which is in view %d as incarnation %d",
					n, l.View, l.Seq, l.Inc, l.Sender, l.View, inc)
			}
		case "view":
			r = group.Record{Kind: group.VView, View: l.View, Members: l.Members, Line: n}
			lastView, viewInc = l.View, map[node.ID]uint64{}
			for _, m := range l.Members {
				viewInc[m.ID] = m.Inc
			}
			if cur == (group.Member{}) {
				for _, m := range l.Members {
					if m.ID == vl.ID && (inc == 0 || m.Inc == inc) {
						cur = m
					}
				}
				if cur == (group.Member{}) {
					return nil, fmt.Errorf("line %d: view %d without member %d", n, l.View, vl.ID)
				}
				vl.Lives[cur] = append(vl.Lives[cur], pending...)
				pending = nil
			}
		case "left":
			r = group.Record{Kind: group.VLeft, View: l.View, Line: n}
			if l.Next != nil {
				r.Leader = *l.Next
			}
			left = true
		case "removed":
			cur, inc = group.Member{}, l.Inc
			continue
		case "transitional":
			r = group.Record{Kind: group.VTransitional, View: l.View, Members: l.Members, Line: n}
		case "merge":
			r = group.Record{Kind: group.VMerge, View: l.View, Members: l.Members, Line: n}
			if l.Into != node.None {
				// The component left the view together, into no view of
				// its own; the next incarnation starts here.
				if cur == (group.Member{}) {
					return nil, fmt.Errorf("line %d: a merge before any view", n)
				}
				vl.Lives[cur] = append(vl.Lives[cur], r, group.Record{Kind: group.VLeft, View: l.View + 1, Line: n})
				cur, inc = group.Member{}, l.Inc
				continue
			}
		case "minority", "room", "lost", "missed":
			continue
		case "exit":
			clean = true
			continue
		default:
			return nil, fmt.Errorf("line %d: unknown event %q", n, l.Event)
		}
		if cur == (group.Member{}) {
			pending = append(pending, r) // sends queued before the first view
			continue
		}
		vl.Lives[cur] = append(vl.Lives[cur], r)
	}
	if vl.ID == node.None {
		return nil, errors.New("no member in this log")
	}
	if clean && !left && cur != (group.Member{}) {
		vl.Final = &cur
	}
	return vl, nil
}
