package ticket

import (
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestLeftPlaceCountsWithItsTaker: the excluder's count of a list (speak.go,
// counted). Y gave its place (ticket 1) back through P, which vouches for
// that place since; the successor's L is {A, Y, B}, and a strict majority,
// two, must count as banned. A and Y voted: Y's place counts only once P
// has voted too (the planted bugTakerUnasked counts it on Y's vote alone,
// and P's vouches for Y's place would then go on with A's ban the only one
// that counts); a voter that does not answer for a place (a member started
// again, which remembers none of its old ones) does not count for it; and
// a taker inside E_pq never counts, since it would never vote.
func TestLeftPlaceCountsWithItsTaker(t *testing.T) {
	const a, y, b, p, gone node.ID = 1, 2, 3, 4, 5
	list := []Owner{{Ticket: 0, ID: a}, {Ticket: 1, ID: y}, {Ticket: 2, ID: b}}
	newEx := func(taker node.ID) *exclusion {
		ex := &exclusion{lists: [][]Owner{list}, gone: []node.ID{gone}, voters: map[node.ID]bool{a: true, y: true, b: true}, acks: map[node.ID]bool{}}
		ex.acks[a] = true
		ex.noteAnswers(a, Msg{Preds: []Owner{list[0]}})
		ex.acks[y] = true
		if more := ex.noteAnswers(y, Msg{Preds: []Owner{list[1]}, Succs: []Owner{{Ticket: 1, ID: taker}}}); more != (taker != gone) {
			t.Fatalf("taker %d: asked more voters %v", taker, more)
		}
		return ex
	}
	ex := newEx(p)
	if !ex.voters[p] {
		t.Fatalf("the taker was not made a voter: %v", ex.voters)
	}
	if ex.quorumBanned(0) {
		t.Errorf("a quorum counted with the taker of Y's place silent")
	}
	if !ex.quorumBanned(bugTakerUnasked) {
		t.Errorf("the planted bug did not count Y's place on its own vote")
	}
	ex.acks[p] = true
	ex.noteAnswers(p, Msg{Preds: []Owner{{Ticket: 3, ID: p}}})
	if !ex.quorumBanned(0) {
		t.Errorf("no quorum with A, Y and Y's taker P voting")
	}

	// A member started again answers for its new place only.
	ex = newEx(p)
	ex.acks[p] = true
	ex.noteAnswers(p, Msg{Preds: []Owner{{Ticket: 3, ID: p}}})
	ex.answers[a] = []Owner{{Ticket: 7, ID: a}}
	if ex.quorumBanned(0) {
		t.Errorf("A's vote counted for a place it does not answer for")
	}

	// A taker inside E_pq.
	ex = newEx(gone)
	if ex.voters[gone] || ex.quorumBanned(0) {
		t.Errorf("a taker inside E_pq was asked (%v) or Y's place counted", ex.voters[gone])
	}
	ex.acks[b] = true
	ex.noteAnswers(b, Msg{Preds: []Owner{list[2]}})
	if !ex.quorumBanned(0) {
		t.Errorf("no quorum with A and B voting")
	}
}
