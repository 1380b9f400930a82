package group

import (
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

// TestSimGroupBacklog: in every order of the dynamic group, a member
// whose runner writes nothing for 3 s (far past Suspect) is handed no
// more than its Backlog, is not taken out of the view, and holds the
// senders back; once it writes again every member delivers every line,
// in one order where the order is total.
func TestSimGroupBacklog(t *testing.T) {
	for _, total := range []Total{TotalNone, TotalSequencer, TotalLamport, TotalISIS, TotalTotem} {
		t.Run(total.String(), func(t *testing.T) {
			const perSender, backlog = 300, 20 * (3 + 32)
			ids := []node.ID{1, 2, 3}
			s := sim.New[Msg](sim.Options{Seed: 1, MinLatency: time.Millisecond, MaxLatency: 2 * time.Millisecond}, Codec{},
				func(id node.ID, _ int, _ *rand.Rand) node.Machine[Msg] {
					m, err := New(Config{ID: id, Inc: 1, Found: id == 1, Contacts: ids, Total: total, StartWith: 3,
						Window: 32, Backlog: backlog})
					if err != nil {
						t.Fatal(err)
					}
					return m
				}, ids...)
			handed := map[node.ID]uint64{}
			order := map[node.ID][]Stamp{}
			views := map[node.ID]int{}
			s.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
				switch e := ev.(type) {
				case DeliverEvent:
					handed[id] += mcast.Cost(e.Payload)
					order[id] = append(order[id], Stamp{e.Sender, e.Seq})
				case ViewEvent:
					views[id]++
				case RemovedEvent, LeftEvent:
					return fmt.Errorf("member %d: %v", id, ev)
				}
				return nil
			}
			reads := map[node.ID]bool{1: true, 2: true, 3: true}
			next := map[node.ID]int{}
			step := func() {
				for _, id := range ids[:2] {
					if next[id] < perSender {
						before := s.Stats.Rejected
						s.Inject(id, Msg{Type: MsgSend, Items: []mcast.Item{{Payload: []byte(fmt.Sprintf("%d%02d", id, next[id]%100))}}})
						if s.Stats.Rejected == before {
							next[id]++
						}
					}
				}
				for _, id := range ids {
					if reads[id] {
						s.Inject(id, Msg{Type: MsgWritten, Written: handed[id]})
					}
				}
				if err := s.RunFor(2 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.RunFor(2 * time.Second); err != nil { // the group forms
				t.Fatal(err)
			}
			reads[3] = false
			for i := 0; i < 1500; i++ { // 3 s
				step()
				if handed[3] > backlog+mcast.Cost([]byte("100")) {
					t.Fatalf("member 3 was handed %d, its backlog is %d", handed[3], backlog)
				}
			}
			if next[1]+next[2] == 2*perSender {
				t.Fatalf("the senders sent all %d lines while member 3's reader was stopped", 2*perSender)
			}
			stalled := next[1] + next[2]
			reads[3] = true
			for i := 0; i < 5000 && min(len(order[1]), len(order[2]), len(order[3])) < 2*perSender; i++ {
				step()
			}
			for _, id := range ids {
				if len(order[id]) != 2*perSender {
					t.Fatalf("member %d delivered %d of %d (%d sent while 3 was stalled)", id, len(order[id]), 2*perSender, stalled)
				}
				if views[id] != views[1] {
					t.Fatalf("member %d installed %d views, member 1 %d", id, views[id], views[1])
				}
				if total != TotalNone && !slices.Equal(order[id], order[1]) {
					t.Fatalf("members 1 and %d delivered in different orders", id)
				}
			}
			t.Logf("%d of %d lines sent while member 3's reader was stopped; %d views", stalled, 2*perSender, views[1])
		})
	}
}
