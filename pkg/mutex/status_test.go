package mutex

import (
	"slices"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/fd"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestDown: a member is down once the detector's bound has passed since it
// was last heard, or since this daemon started for one never heard; never
// before this daemon has listened that long, and never itself.
func TestDown(t *testing.T) {
	t0 := time.Unix(1000, 0)
	det := fd.NewTimeout(2 * time.Second)
	members := []node.ID{1, 2, 3, 4}
	det.Heard(2, t0.Add(time.Second))
	det.Heard(3, t0.Add(3*time.Second))
	for _, c := range []struct {
		at   time.Duration
		want []node.ID
	}{
		{0, []node.ID{}},
		{2 * time.Second, []node.ID{}},          // 4 never heard, but only 2 s of listening
		{2*time.Second + 1, []node.ID{4}},       // now it has listened for the bound
		{3*time.Second + 1, []node.ID{2, 4}},    // 2 silent for more than the bound
		{5 * time.Second, []node.ID{2, 4}},      // 3 last heard at 3 s: not yet
		{5*time.Second + 1, []node.ID{2, 3, 4}}, // and now
	} {
		if got := down(det, members, 1, t0, t0.Add(c.at)); !slices.Equal(got, c.want) {
			t.Errorf("at %v: down %v, want %v", c.at, got, c.want)
		}
	}
	if got := down(det, members, 1, time.Time{}, t0.Add(time.Hour)); len(got) != 0 {
		t.Errorf("before the daemon started: down %v", got)
	}
}

// TestMergeLocks: one row per name, the holder from the member holding it,
// the members' waiting clients in the order each algorithm serves them.
func TestMergeLocks(t *testing.T) {
	rows := []LockStatus{
		{Name: "db", Node: 1, Queue: []string{"1/7", "1/8"}, Stamp: 12},
		{Name: "db", Node: 2, Holder: 2, Client: 5, Token: 40, Queue: []string{"2/6"}},
		{Name: "db", Node: 3, Queue: []string{"3/9"}, Stamp: 11},
		{Name: "db", Node: 4, Queue: []string{"4/1"}}, // no request out yet
		{Name: "aa", Node: 4, Holder: 4, Client: 2, Token: 3},
	}
	ring := []node.ID{1, 2, 3, 4}
	for _, c := range []struct {
		algo  Algo
		queue []string
	}{
		// stamps 11 (member 3), 12 (member 1); members 2 (holder's later
		// client) and 4 have no request out, so come after, by ID
		{RicartAgrawala, []string{"3/9", "1/7", "1/8", "2/6", "4/1"}},
		// the token goes from the holder's member 2 to 3, 4, 1, and back to 2
		{TokenRing, []string{"3/9", "4/1", "1/7", "1/8", "2/6"}},
		{Voting, []string{"1/7", "1/8", "2/6", "3/9", "4/1"}},
	} {
		got := MergeLocks(c.algo, ring, slices.Clone(rows))
		if len(got) != 2 || got[0].Name != "aa" || got[0].Holder != 4 || got[0].Token != 3 || len(got[0].Queue) != 0 {
			t.Fatalf("%v: rows %+v", c.algo, got)
		}
		db := got[1]
		if db.Holder != 2 || db.Client != 5 || db.Token != 40 || db.Node != 0 || db.Stamp != 0 || !slices.Equal(db.Queue, c.queue) {
			t.Errorf("%v: db %+v, want holder 2/5 token 40 queue %v", c.algo, db, c.queue)
		}
	}
	// A ring with no holder: in ring order from its first member.
	free := []LockStatus{{Name: "x", Node: 3, Queue: []string{"3/1"}}, {Name: "x", Node: 1, Queue: []string{"1/1"}}}
	if got := MergeLocks(TokenRing, []node.ID{3, 1, 2}, free); !slices.Equal(got[0].Queue, []string{"3/1", "1/1"}) {
		t.Errorf("free ring lock: %+v", got)
	}
}
