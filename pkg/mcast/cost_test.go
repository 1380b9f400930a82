package mcast

import (
	"fmt"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// loadCost is what a group of five spends per multicast at a steady load
// with the default timers, on a loss-free network of 1 ms links: frames
// of each kind per message delivered, and the copies of data sent again.
type loadCost struct {
	Data, Order, Status, Token, Other float64 // frames per multicast
	Resent                            float64 // data items sent again, per multicast
	ResentShare                       float64 // ... as a share of every data item copy sent
}

func (c loadCost) total() float64 { return c.Data + c.Order + c.Status + c.Token + c.Other }

func (c loadCost) String() string {
	return fmt.Sprintf("%.2f frames (data %.2f, order %.2f, status %.2f, token %.2f, other %.2f), resent %.2f items (%.1f%% of data copies)",
		c.total(), c.Data, c.Order, c.Status, c.Token, c.Other, c.Resent, 100*c.ResentShare)
}

// measureLoad runs a settled group of n members, each sending rate
// messages a second (one per GSend, as lines come) for dur, and counts
// the frames from the first send until every member has delivered every
// message.
func measureLoad(t *testing.T, n int, cfg GroupConfig, rate int, dur time.Duration) loadCost {
	t.Helper()
	ids := make([]node.ID, n)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	s, delivered := countingGroup(t, ids, cfg)
	if err := s.RunFor(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if g := s.Machine(id).(*Group); !g.inView || len(g.view.Members) != n {
			t.Fatalf("%v: member %d not in the full view", cfg.Total, id)
		}
	}
	resent := func() (k uint64) {
		for _, id := range ids {
			k += s.Machine(id).(*Group).stats["retransmitted"]
		}
		return k
	}
	before := map[uint8]int{}
	for typ, k := range s.Stats.Sent {
		before[typ] = k
	}
	resent0, delivered0 := resent(), *delivered
	every := time.Second / time.Duration(rate)
	count := 0
	for at := time.Duration(0); at < dur; at += every {
		for _, id := range ids {
			s.Inject(id, GMsg{Type: GSend, Items: []Item{{Payload: []byte(fmt.Sprintf("%d-%d", id, count))}}})
		}
		count++
		if err := s.RunFor(every); err != nil {
			t.Fatal(err)
		}
	}
	want := delivered0 + n*n*count
	for i := 0; i < 500 && *delivered < want; i++ {
		if err := s.RunFor(time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if *delivered != want {
		t.Fatalf("%v safe=%v: %d deliveries, want %d", cfg.Total, cfg.Safe, *delivered-delivered0, want-delivered0)
	}
	msgs := float64(n * count)
	per := func(types ...GType) float64 {
		k := 0
		for _, typ := range types {
			k += s.Stats.Sent[uint8(typ)] - before[uint8(typ)]
		}
		return float64(k) / msgs
	}
	c := loadCost{Data: per(GData), Order: per(GOrder, GPrio, GFinal), Status: per(GStatus), Token: per(GToken)}
	all := 0
	for typ, k := range s.Stats.Sent {
		all += k - before[typ]
	}
	c.Other = float64(all)/msgs - c.total()
	r := float64(resent() - resent0)
	c.Resent = r / msgs
	c.ResentShare = r / (r + msgs*float64(n-1))
	return c
}

// costCases are the orders counted at load: each total order, and safe
// delivery where it changes what is sent.
var costCases = []struct {
	name string
	cfg  GroupConfig
}{
	{"none", GroupConfig{}},
	{"sequencer", GroupConfig{Total: TotalSequencer}},
	{"lamport", GroupConfig{Total: TotalLamport}},
	{"isis", GroupConfig{Total: TotalISIS}},
	{"totem", GroupConfig{Total: TotalTotem}},
	{"sequencer --safe", GroupConfig{Total: TotalSequencer, Safe: true}},
	{"totem --safe", GroupConfig{Total: TotalTotem, Safe: true}},
}

// TestLoadMessageCost counts what each order spends per multicast with
// the default timers (heartbeat every 20 ms) at 500 messages a second
// from each of five members, on a loss-free network.
func TestLoadMessageCost(t *testing.T) {
	for _, c := range costCases {
		got := measureLoad(t, 5, c.cfg, 500, time.Second)
		t.Logf("%-17s %v", c.name, got)
	}
}
