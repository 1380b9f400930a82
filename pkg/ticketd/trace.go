package ticketd

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/ticket"
)

// traced wraps a slot's Member for `--log-level debug`: after every step
// it logs, on stderr, what changed in the slot's place in the ring (its
// state, its ticket, how many free tickets it would hand a joiner now,
// its L: the predecessors whose ALIVEs keep it in the core, §4) and which
// message or tick changed it. A real run's logs then
// show how a process came to hold the L it lost its support with, which
// the events alone do not (docs/ticketd.md, "One member cut off"). It
// reads the machine's state only; every decision stays in the Member.
type traced struct {
	*ticket.Member
	log   *slog.Logger
	slot  int
	state string
	tkt   uint32
	free  int
	preds []ticket.Owner
}

// traceMember wraps h when the log takes debug lines, and returns h
// unchanged otherwise (nothing is read per step then).
func traceMember(h *ticket.Member, log *slog.Logger, slot int) node.Machine[ticket.Msg] {
	if log == nil || !log.Enabled(context.Background(), slog.LevelDebug) {
		return h
	}
	return &traced{Member: h, log: log, slot: slot}
}

func (t *traced) Step(now time.Time, in node.Envelope[ticket.Msg]) error {
	err := t.Member.Step(now, in)
	t.changed(now, func() string { return fmt.Sprintf("%s from %d", in.Msg.Type, in.From) })
	return err
}

func (t *traced) Tick(now time.Time) {
	t.Member.Tick(now)
	t.changed(now, func() string { return "tick" })
}

func (t *traced) changed(now time.Time, by func() string) {
	m := t.Member.Machine()
	tk, _, _ := m.Ticket()
	st, preds, free := m.State(), m.L(), m.Free(now)
	if st == t.state && tk == t.tkt && free == t.free && slices.Equal(preds, t.preds) {
		return
	}
	t.state, t.tkt, t.free, t.preds = st, tk, free, preds
	l := make([]string, len(preds))
	for i, o := range preds {
		l[i] = fmt.Sprintf("%v@%d", o.ID, o.Ticket)
	}
	t.log.Debug("place", "slot", t.slot, "state", st, "ticket", tk, "free", free, "L", strings.Join(l, " "), "by", by())
}
