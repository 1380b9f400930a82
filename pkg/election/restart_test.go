package election

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestRingRestartedLeaderTakesNoOldTerm: process 6 led term 19, crashed
// and restarted from stable storage (Config.Term 19). The coordinator
// message of that old election is still going round the ring (a paused
// member held it) and reaches the new incarnation. It must not lead term
// 19 a second time: a term is announced once (Checker), and a command's
// fencing token is its term. Found by the simulator with a resumed member
// handed its queued messages before its first tick (sim.Options.HeldFirst;
// TestSimLeases/ring seed 815).
func TestRingRestartedLeaderTakesNoOldTerm(t *testing.T) {
	ids := []node.ID{1, 2, 3, 4, 5, 6, 7}
	m, err := New(Config{ID: 6, Peers: ids, Algo: Ring, Term: 19, Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Tick(now)
	m.Ready()
	var members []Member
	for _, id := range ids {
		members = append(members, Member{id, 0})
	}
	old := Msg{Type: MsgCoordinator, Origin: 3, Round: 4, Leader: 6, Term: 19, Members: members}
	if err := m.Step(now.Add(time.Millisecond), node.Envelope[Msg]{From: 5, To: 6, Msg: old}); err != nil {
		t.Fatal(err)
	}
	for _, ev := range m.Ready().Events {
		if le, ok := ev.(LeaderEvent); ok && le.Leader == 6 {
			t.Fatalf("restarted process 6 announced %v, a term it knew at start", le)
		}
	}
	if m.leading {
		t.Fatalf("restarted process 6 leads term 19 again")
	}
}
