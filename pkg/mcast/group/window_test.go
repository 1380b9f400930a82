package group

import (
	"errors"
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestWindowShare: what floods into one member is every other member's
// window, so past three members each sender's window is a share of
// 2·Window: a member of three keeps 4,096 messages in flight, of five
// 2,048, of nine 1,024, and is refused (ErrFull) past that while the
// others have acknowledged nothing. The planted bug that keeps the whole
// Window at every size is caught at five and nine members.
func TestWindowShare(t *testing.T) {
	for _, c := range []struct {
		n, want int
		bug     bug
	}{{3, 4096, 0}, {5, 2048, 0}, {9, 1024, 0}, {5, 4096, bugFixedWindow}, {9, 4096, bugFixedWindow}} {
		ids := make([]node.ID, c.n)
		for i := range ids {
			ids[i] = node.ID(i + 1)
		}
		s, _ := countingGroup(t, ids, Config{Total: TotalSequencer, StartWith: c.n, bug: c.bug})
		if err := s.RunFor(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		g := s.Machine(1).(*Group)
		if len(g.view.Members) != c.n {
			t.Fatalf("%d members: view of %d", c.n, len(g.view.Members))
		}
		s.Isolate(1) // no acknowledgement comes back
		accepted := 0
		for k := 0; k < 10000; k++ {
			err := g.Step(s.Now(), node.Envelope[Msg]{From: 1, To: 1, Msg: Msg{Type: MsgSend, Items: []mcast.Item{{Payload: []byte(fmt.Sprint(k))}}}})
			if errors.Is(err, mcast.ErrFull) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			accepted++
		}
		if accepted != c.want {
			t.Errorf("%d members (bug %d): %d messages in flight before ErrFull, want %d", c.n, c.bug, accepted, c.want)
		}
	}
}
