package mcastd

import (
	"bytes"
	"encoding/json"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/driver"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

func reply(t *testing.T, st any) driver.StatusReply {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return driver.StatusReply{Addr: "127.0.0.1:7000", Status: b}
}

// TestStatus: one line per member that answers, in ID order, then the
// silent ones; members in two views exit 75, a member that runs no
// dynamic group exit 64.
func TestStatus(t *testing.T) {
	members := []group.Member{{ID: 1, Inc: 1}, {ID: 2, Inc: 1}}
	in := func(id node.ID, view uint64) group.Status {
		return group.Status{ID: id, View: view, InView: true, Leader: 1, Members: members, Order: "totem", Safe: true,
			Token: 9, Received: []uint64{3, 4}, Aru: []uint64{3, 4}, Delivered: []uint64{3, 4}, Sent: 4}
	}
	var out bytes.Buffer
	replies := map[node.ID]driver.StatusReply{2: reply(t, in(2, 7)), 1: reply(t, in(1, 7))}
	if err := Status(cli.NewOutput(&out, false), []node.ID{1, 2, 3}, replies); err != nil {
		t.Fatal(err)
	}
	want := "member 1 view 7 leader 1 members 1,2 totem safe token 9 flushing false received 3,4 aru 3,4 delivered 3,4 sent 4 queue 0 unacked 0\n" +
		"member 2 view 7 leader 1 members 1,2 totem safe token 9 flushing false received 3,4 aru 3,4 delivered 3,4 sent 4 queue 0 unacked 0\n" +
		"member 3 silent\n"
	if out.String() != want {
		t.Fatalf("got\n%swant\n%s", out.String(), want)
	}
	out.Reset()
	replies[2] = reply(t, group.Status{ID: 2, View: 6})
	err := Status(cli.NewOutput(&out, true), []node.ID{1, 2, 3}, replies)
	if cli.Code(err) != cli.ExitBusy {
		t.Fatalf("two views: %v, want exit 75", err)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[1], `"member":2`) || !strings.Contains(lines[1], `"in_view":false`) {
		t.Fatalf("--json: %q", out.String())
	}
	replies[2] = reply(t, map[string]int{"id": 5})
	if err := Status(cli.NewOutput(&out, false), nil, replies); cli.Code(err) != cli.ExitUsage || !strings.Contains(err.Error(), "member 2 does not run a dynamic group") {
		t.Fatalf("not a group: %v", err)
	}
}

// TestCheck: a causal slip (testdata/causal-slip: 3 delivers 2's answer
// before 1's question, which 2 had delivered before it answered) fails
// with exit 1 and the log lines as FILE:LINE; the same logs pass as FIFO;
// no log, a missing one or one given twice is exit 64.
func TestCheck(t *testing.T) {
	a, b, c := filepath.Join("testdata", "causal-slip", "1.log"), filepath.Join("testdata", "causal-slip", "2.log"), filepath.Join("testdata", "causal-slip", "3.log")
	_, err := Check(CheckConfig{Order: mcast.Causal, Files: []string{a, b, c}})
	if cli.Code(err) != 1 || !strings.Contains(err.Error(), "check failed: causal: member 3 delivered 2/1 before 1/1") || !strings.Contains(err.Error(), c+":1: deliver 2/1") {
		t.Fatalf("causal: %v, want exit 1 with the lines", err)
	}
	msg, err := Check(CheckConfig{Order: mcast.FIFO, Files: []string{a, b, c}})
	if want := "ok: 3 members, 6 sends and deliveries, fifo order holds"; err != nil || msg != want {
		t.Fatalf("fifo: %q, %v\nwant %q", msg, err, want)
	}
	msg, err = Check(CheckConfig{Order: mcast.FIFO, Files: []string{a, b}})
	if want := "ok: 2 members, 4 sends and deliveries, fifo order holds"; err != nil || msg != want {
		t.Fatalf("fifo of 1 and 2: %q, %v\nwant %q", msg, err, want)
	}
	for _, cfg := range []CheckConfig{{Order: mcast.FIFO}, {Order: mcast.FIFO, Files: []string{filepath.Join("testdata", "none.log")}}, {Order: mcast.FIFO, Files: []string{a, a}}} {
		if _, err := Check(cfg); cli.Code(err) != cli.ExitUsage {
			t.Fatalf("%+v: %v, want exit 64", cfg, err)
		}
	}
}
