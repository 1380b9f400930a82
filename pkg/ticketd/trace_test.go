package ticketd

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/ticket"
)

// TestTraceLogsPlaceChanges: with debug lines on, a slot's machine is
// wrapped and every change of its state, ticket or L is logged with what
// caused it; a step that changes nothing logs nothing; without debug lines
// the Member is not wrapped at all.
func TestTraceLogsPlaceChanges(t *testing.T) {
	h, err := ticket.NewMember(ticket.Config{ID: 1, Tickets: 2, FaultTolerant: true, Round: 30 * time.Millisecond,
		Rand: rand.New(rand.NewPCG(1, 2))}, func() []node.ID { return nil }, false)
	if err != nil {
		t.Fatal(err)
	}
	if m := traceMember(h, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)), 0); m != node.Machine[ticket.Msg](h) {
		t.Fatalf("wrapped at info level: %T", m)
	}
	var buf bytes.Buffer
	m := traceMember(h, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), 0)
	now := time.Unix(1000, 0)
	if err := m.Step(now, node.Envelope[ticket.Msg]{From: 1, To: 1, Msg: ticket.Msg{Type: ticket.MsgJoin}}); err != nil {
		t.Fatal(err)
	}
	first := buf.String()
	if !strings.Contains(first, "msg=place") || !strings.Contains(first, "state=coordinator") || !strings.Contains(first, "by=") {
		t.Fatalf("a founder's join logged %q, want its new place", first)
	}
	m.Tick(now) // nothing changes
	if buf.String() != first {
		t.Fatalf("a tick that changed nothing logged %q", strings.TrimPrefix(buf.String(), first))
	}
	t.Logf("logged: %s", strings.TrimSpace(first))
}
