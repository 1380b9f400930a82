package group

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestTotemPassesAtOnce: on a busy ring a holder with nothing to send
// passes the token on at once (Nita-Rotaru's CS7610 notes, "TOTEM": the
// token circulates), so a message waits for the token's rotation, n hops
// of the 1 ms links, not for a timer at each idle holder. One member of
// five sends every 2 ms; the median time from its send to a delivery is
// at most a rotation and one link (6 ms) plus a millisecond: measured
// 4 ms (393 token frames for 100 messages). With the planted
// bugTotemHoldIdle every idle holder keeps the token until its next tick
// (Period/4 to Period/2): 21 ms (246 token frames).
func TestTotemPassesAtOnce(t *testing.T) {
	for _, b := range []bug{0, bugTotemHoldIdle} {
		ids := []node.ID{1, 2, 3, 4, 5}
		s, _ := countingGroup(t, ids, Config{Total: TotalTotem, bug: b})
		if err := s.RunFor(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		sentAt := map[string]time.Time{}
		var lat []time.Duration
		s.OnEvent = func(at time.Time, _ node.ID, ev node.Event) error {
			if e, ok := ev.(DeliverEvent); ok {
				if t0, ok := sentAt[string(e.Payload)]; ok {
					lat = append(lat, at.Sub(t0))
				}
			}
			return nil
		}
		tokens := s.Stats.Sent[uint8(MsgToken)]
		const count = 100
		for i := 0; i < count; i++ {
			p := fmt.Sprint("m", i)
			sentAt[p] = s.Now()
			s.Inject(1, Msg{Type: MsgSend, Items: []mcast.Item{{Payload: []byte(p)}}})
			if err := s.RunFor(2 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
		if len(lat) != len(ids)*count {
			t.Fatalf("bug=%d: %d deliveries, want %d", b, len(lat), len(ids)*count)
		}
		slices.Sort(lat)
		p50 := lat[len(lat)/2]
		t.Logf("bug=%d: median send-to-delivery %v (max %v), %d token frames for %d messages", b, p50, lat[len(lat)-1], s.Stats.Sent[uint8(MsgToken)]-tokens, count)
		limit := time.Duration(len(ids)+2) * time.Millisecond
		if caught := p50 > limit; caught != (b != 0) {
			t.Errorf("bug=%d: median send-to-delivery %v, want at most %v on a busy ring (a rotation and a link)", b, p50, limit)
		}
	}
}
