package group

import (
	"bytes"
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"maps"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// VKind is the kind of a Record.
type VKind uint8

const (
	VSend    VKind = iota + 1 // one of the member's own multicasts
	VDeliver                  // a delivery (own messages included)
	VView                     // an installed view
	VLeft                     // the member left, flushing into view View
	// VTransitional: view View's transitional configuration began (safe
	// delivery); Members are the survivors.
	VTransitional
	// VMerge: view View ends in a merge of components (extended virtual
	// synchrony); Members are those of it that move on together.
	VMerge
)

// Record is one line of a group member's log (one incarnation).
type Record struct {
	Kind    VKind
	View    uint64
	Sender  node.ID // deliveries
	Seq     uint64
	Payload []byte
	Members []Member // views
	Leader  Member   // left: the next view's leader (none: the view has no members)
	Line    int      // its line in the log file (0: its position, from 1)
}

// viewBits: in a check, a view is its number plus k<<viewBits for the
// k-th other view with that number (extended virtual synchrony: two
// components may number their views alike; their leaders differ).
const viewBits = 40

// keyViews renames the views of every log by (number, leader), see
// viewBits. In a run without partitions every view keeps its number.
func keyViews(procs []Member, logs map[Member][]Record) (map[Member][]Record, bool) {
	type key struct {
		n      uint64
		leader Member
	}
	ids := map[key]uint64{}
	count := map[uint64]uint64{}
	collided := false
	id := func(k key) uint64 {
		if v, ok := ids[k]; ok {
			return v
		}
		v := k.n + count[k.n]<<viewBits
		if count[k.n] > 0 {
			collided = true
		}
		count[k.n]++
		ids[k] = v
		return v
	}
	out := map[Member][]Record{}
	for _, p := range procs {
		var cur key
		var curID uint64
		recs := make([]Record, len(logs[p]))
		for i, r := range logs[p] {
			switch r.Kind {
			case VView:
				cur = key{r.View, Member{}}
				if len(r.Members) > 0 {
					cur.leader = r.Members[0]
				}
				curID = id(cur)
				r.View = curID
			case VLeft:
				r.View = id(key{r.View, r.Leader})
			default:
				if r.View == cur.n && curID != 0 {
					r.View = curID
				}
			}
			recs[i] = r
		}
		out[p] = recs
	}
	return out, collided
}

type vmsg struct {
	view   uint64
	sender node.ID
	seq    uint64
}

func (k vmsg) String() string { return fmt.Sprintf("%d/%d/%d", k.view, k.sender, k.seq) }

// CheckViews judges a run of a dynamic group from every incarnation's log
// (Nita-Rotaru's properties of virtual synchrony, numbered as there):
//
//  1. self inclusion: a member is in every view it installs;
//  2. local monotonicity: its views' IDs increase;
//     4, 5. integrity and no duplication: it delivers a message at most
//     once, only as its sender sent it;
//  6. sending view delivery: in the view it was sent in;
//  7. virtual synchrony: members that move together from a view to the
//     same next one (installing it, or leaving into it) deliver the same
//     messages in the former;
//     - FIFO: each sender's messages of a view in the order sent;
//     - with total set, agreed delivery (9): any two members that go
//     through a view (move on from it, or end in it in final) deliver the
//     messages of it they both deliver in the same order;
//  3. self delivery: a member whose log ends with leaving (in left) has
//     delivered each of its own messages;
//     - agreement at the end: the members in final that end in the same view
//     delivered the same messages in it;
//  10. safe delivery, with transitional lines (below);
//  11. transitional set: of the members that come from the view into the
//     same next one, one in the other's set, the sets are equal; and each
//     set holds only members of the next view.
//
// A failure is a *Violation with the lines that show it.
func CheckViews(total bool, logs map[Member][]Record, final map[Member]bool) error {
	return CheckViewsEVS(total, false, logs, final)
}

// CheckViewsEVS is CheckViews for a group with extended virtual synchrony
// (evs): a view that a partition split ends differently in each
// component, each with its own flush, so agreed order (9) is judged among
// the members that move on together from the view (into the same next
// view, or ending the run in it), as Spread's and TOTEM's extended
// virtual synchrony promise it within a transitional configuration.
func CheckViewsEVS(total, evs bool, logs map[Member][]Record, final map[Member]bool) error {
	procs := slices.SortedFunc(func(yield func(Member) bool) {
		for p := range logs {
			if !yield(p) {
				return
			}
		}
	}, func(a, b Member) int {
		if a.ID != b.ID {
			return int(a.ID) - int(b.ID)
		}
		if a.Inc < b.Inc {
			return -1
		}
		if a.Inc > b.Inc {
			return 1
		}
		return 0
	})
	logs, collided := keyViews(procs, logs)
	line := func(p Member, i int) int {
		if l := logs[p][i].Line; l > 0 {
			return l
		}
		return i + 1
	}
	ev := func(p Member, i int, what string) mcast.Evidence {
		return mcast.Evidence{Member: p.ID, Line: line(p, i), What: what}
	}
	// Who each view's member with a given ID is, and what it sent.
	sent := map[vmsg][]byte{}
	sentAt := map[vmsg]mcast.Evidence{}
	type vsender struct {
		view   uint64
		sender node.ID
	}
	unlogged := map[vsender]uint64{} // a cut-short log's last view → the sends it logged there
	viewOf := map[uint64][]Member{}
	for _, p := range procs {
		var view uint64
		var seq uint64
		for i, r := range logs[p] {
			switch r.Kind {
			case VView:
				if !slices.Contains(r.Members, p) {
					return &mcast.Violation{Text: fmt.Sprintf("self inclusion: member %d/%d installed view %d without itself", p.ID, p.Inc, r.View),
						Evidence: []mcast.Evidence{ev(p, i, fmt.Sprintf("view %d", r.View))}, Found: 1}
				}
				if r.View&(1<<viewBits-1) <= view&(1<<viewBits-1) {
					return &mcast.Violation{Text: fmt.Sprintf("local monotonicity: member %d/%d installed view %d after view %d", p.ID, p.Inc, r.View, view),
						Evidence: []mcast.Evidence{ev(p, i, fmt.Sprintf("view %d", r.View))}, Found: 1}
				}
				if old, ok := viewOf[r.View]; ok && !slices.Equal(old, r.Members) {
					return &mcast.Violation{Text: fmt.Sprintf("two views %d: %v and %v", r.View, old, r.Members),
						Evidence: []mcast.Evidence{ev(p, i, fmt.Sprintf("view %d", r.View))}, Found: 1}
				}
				viewOf[r.View] = r.Members
				view, seq = r.View, 0
			case VSend:
				seq++
				if r.View != view || r.Seq != seq {
					return &mcast.Violation{Text: fmt.Sprintf("member %d/%d sent %d/%d, expected %d/%d", p.ID, p.Inc, r.View, r.Seq, view, seq),
						Evidence: []mcast.Evidence{ev(p, i, fmt.Sprintf("send %d/%d", r.View, r.Seq))}, Found: 1}
				}
				k := vmsg{view, p.ID, r.Seq}
				sent[k], sentAt[k] = r.Payload, ev(p, i, "send "+k.String())
			}
		}
		// A log that ends neither in leaving nor cleanly (a member killed
		// or still running) may lack its last sends: a process writes a
		// send's line after its frame has gone out, and SIGKILL can come
		// between the two. Its later sends in its last view are unlogged,
		// not invented.
		if n := len(logs[p]); view != 0 && !final[p] && (n == 0 || logs[p][n-1].Kind != VLeft) {
			unlogged[vsender{view, p.ID}] = seq
		}
	}
	isUnlogged := func(k vmsg) bool {
		n, cut := unlogged[vsender{k.view, k.sender}]
		return cut && k.seq > n
	}
	type span struct {
		start, end int    // record indexes [start, end) in the view
		next       uint64 // the view moved to (installed or left into); 0: none
	}
	// delivered[p][view]: the messages in order, and where.
	type dl struct {
		k  vmsg
		at int
	}
	dels := map[Member]map[uint64][]dl{}
	moves := map[Member]map[uint64]uint64{} // view → next view
	var found []*mcast.Violation
	report := func(v *mcast.Violation) { found = append(found, v) }
	for _, p := range procs {
		dels[p], moves[p] = map[uint64][]dl{}, map[uint64]uint64{}
		var view uint64
		seen := map[vmsg]int{}
		last := map[node.ID]uint64{}
		for i, r := range logs[p] {
			switch r.Kind {
			case VView:
				if view != 0 {
					moves[p][view] = r.View
				}
				view = r.View
				clear(last)
			case VLeft:
				if view != 0 {
					moves[p][view] = r.View
				}
			case VDeliver:
				k := vmsg{r.View, r.Sender, r.Seq}
				switch pl, ok := sent[k]; {
				case r.View != view:
					report(&mcast.Violation{Text: fmt.Sprintf("sending view delivery: member %d/%d delivered %v in view %d", p.ID, p.Inc, k, view),
						Evidence: []mcast.Evidence{ev(p, i, "deliver "+k.String())}})
				case !ok && isUnlogged(k):
					// sent after its sender's log was cut short (above)
				case !ok:
					report(&mcast.Violation{Text: fmt.Sprintf("integrity: member %d/%d delivered %v, never sent", p.ID, p.Inc, k),
						Evidence: []mcast.Evidence{ev(p, i, "deliver "+k.String())}})
				case !bytes.Equal(pl, r.Payload):
					report(&mcast.Violation{Text: fmt.Sprintf("integrity: member %d/%d delivered %v with another payload", p.ID, p.Inc, k),
						Evidence: []mcast.Evidence{sentAt[k], ev(p, i, "deliver "+k.String())}})
				case seen[k] != 0:
					report(&mcast.Violation{Text: fmt.Sprintf("no duplication: member %d/%d delivered %v twice", p.ID, p.Inc, k),
						Evidence: []mcast.Evidence{{Member: p.ID, Line: seen[k], What: "deliver " + k.String()}, ev(p, i, "deliver "+k.String()+" again")}})
				case r.Seq != last[r.Sender]+1:
					report(&mcast.Violation{Text: fmt.Sprintf("fifo: member %d/%d delivered %v after %d/%d/%d", p.ID, p.Inc, k, view, r.Sender, last[r.Sender]),
						Evidence: []mcast.Evidence{ev(p, i, "deliver "+k.String())}})
				}
				seen[k] = line(p, i)
				last[r.Sender] = max(last[r.Sender], r.Seq)
				dels[p][r.View] = append(dels[p][r.View], dl{k, line(p, i)})
			}
		}
	}
	setOf := func(p Member, v uint64) map[vmsg]int {
		s := map[vmsg]int{}
		for _, d := range dels[p][v] {
			s[d.k] = d.at
		}
		return s
	}
	// 7: virtual synchrony.
	for ai, a := range procs {
		for _, b := range procs[ai+1:] {
			for _, v := range slices.Sorted(maps.Keys(moves[a])) {
				next := moves[a][v]
				if moves[b][v] != next {
					continue
				}
				sa, sb := setOf(a, v), setOf(b, v)
				for _, pair := range [][2]Member{{a, b}, {b, a}} {
					x, y := sa, sb
					if pair[0] == b {
						x, y = sb, sa
					}
					for _, d := range dels[pair[0]][v] {
						if _, ok := y[d.k]; !ok {
							report(&mcast.Violation{Text: fmt.Sprintf("virtual synchrony: members %d/%d and %d/%d moved from view %d to %d; %d/%d delivered %v there, %d/%d did not",
								a.ID, a.Inc, b.ID, b.Inc, v, next, pair[0].ID, pair[0].Inc, d.k, pair[1].ID, pair[1].Inc),
								Evidence: []mcast.Evidence{{Member: pair[0].ID, Line: x[d.k], What: "deliver " + d.k.String()}, {Member: pair[1].ID, Line: 0, What: "never delivers " + d.k.String() + " in view " + fmt.Sprint(v)}}})
							break
						}
					}
				}
			}
		}
	}
	lastView := func(p Member) uint64 {
		for i := len(logs[p]) - 1; i >= 0; i-- {
			if r := logs[p][i]; r.Kind == VView {
				return r.View
			} else if r.Kind == VLeft {
				return 0
			}
		}
		return 0
	}
	// correct: p went through view v (moved on from it, or ended the run
	// in it); a member that crashed or was removed in v may have
	// delivered there what the others did not, in another order (the
	// guarantees are not uniform: that is what safe delivery is for).
	correct := func(p Member, v uint64) bool {
		return moves[p][v] != 0 || final[p] && lastView(p) == v
	}
	// 9: agreed order, pairwise within each view (a message is delivered
	// only in its view, and views are ordered).
	if total {
		for ai, a := range procs {
			for _, b := range procs[ai+1:] {
				for _, v := range slices.Sorted(maps.Keys(dels[a])) {
					da := dels[a][v]
					if !correct(a, v) || !correct(b, v) || evs && moves[a][v] != moves[b][v] {
						continue
					}
					posB := map[vmsg]int{}
					for i, d := range dels[b][v] {
						posB[d.k] = i
					}
					prev, prevK, prevAt := -1, vmsg{}, 0
					for _, d := range da {
						i, ok := posB[d.k]
						if !ok {
							continue
						}
						if i < prev {
							report(&mcast.Violation{Text: fmt.Sprintf("agreed order: member %d/%d delivered %v before %v, member %d/%d the other way", a.ID, a.Inc, prevK, d.k, b.ID, b.Inc),
								Evidence: []mcast.Evidence{{Member: a.ID, Line: prevAt, What: "deliver " + prevK.String()}, {Member: a.ID, Line: d.at, What: "deliver " + d.k.String()},
									{Member: b.ID, Line: dels[b][v][i].at, What: "deliver " + d.k.String()}, {Member: b.ID, Line: dels[b][v][prev].at, What: "deliver " + prevK.String()}}})
							break
						}
						prev, prevK, prevAt = i, d.k, d.at
					}
				}
			}
		}
	}
	// 3: self delivery, for members that left.
	for _, p := range procs {
		recs := logs[p]
		if len(recs) == 0 || recs[len(recs)-1].Kind != VLeft {
			continue
		}
		got := map[vmsg]bool{}
		for _, r := range recs {
			if r.Kind == VDeliver {
				got[vmsg{r.View, r.Sender, r.Seq}] = true
			}
		}
		for i, r := range recs {
			if k := (vmsg{r.View, p.ID, r.Seq}); r.Kind == VSend && !got[k] {
				report(&mcast.Violation{Text: fmt.Sprintf("self delivery: member %d/%d left without delivering its own %v", p.ID, p.Inc, k),
					Evidence: []mcast.Evidence{ev(p, i, "send "+k.String()), {Member: p.ID, Line: 0, What: "never delivers " + k.String()}}})
			}
		}
	}
	// Safe delivery (logs with transitional lines: mcast run --safe). A
	// message delivered before the view's transitional line (or by a
	// member that crashed before it had one) was held by every member of
	// the view, so every member that went through the view delivers it
	// there, whatever became of the member that delivered it first.
	safe := false
	for _, p := range procs {
		view := uint64(0)
		for i, r := range logs[p] {
			switch r.Kind {
			case VView:
				view = r.View
			case VTransitional, VMerge:
				safe = safe || r.Kind == VTransitional
				if r.View != view || !slices.Contains(r.Members, p) || !subset(r.Members, viewOf[r.View]) {
					report(&mcast.Violation{Text: fmt.Sprintf("transitional configuration: member %d/%d announced %v in view %d (its view %d, members %v)", p.ID, p.Inc, r.Members, r.View, view, viewOf[r.View]),
						Evidence: []mcast.Evidence{ev(p, i, fmt.Sprintf("transitional %d", r.View))}})
				}
			}
		}
	}
	// 11 and the transitional set's definition (Nita-Rotaru's notes,
	// "Transitional Configuration", II. Transitional Set): it holds the
	// members that come from the view and will be in the same next one
	// (so, of a member that installs the next view, a subset of it), and
	// two members that install the same next view, one in the other's
	// transitional set, have the same transitional set.
	type tset struct {
		members []Member
		at      int
	}
	trans := map[Member]map[uint64]tset{}
	for _, p := range procs {
		for i, r := range logs[p] {
			if r.Kind != VTransitional {
				continue
			}
			if trans[p] == nil {
				trans[p] = map[uint64]tset{}
			}
			trans[p][r.View] = tset{r.Members, line(p, i)}
			next := moves[p][r.View]
			if nv, ok := viewOf[next]; ok && slices.Contains(nv, p) && !subset(r.Members, nv) {
				report(&mcast.Violation{Text: fmt.Sprintf("transitional set: member %d/%d's for view %d is %v, not all of them in the next view %d %v", p.ID, p.Inc, r.View, r.Members, next, nv),
					Evidence: []mcast.Evidence{ev(p, i, fmt.Sprintf("transitional %d", r.View))}})
			}
		}
	}
	for _, p := range procs {
		for _, v := range slices.Sorted(maps.Keys(trans[p])) {
			tp := trans[p][v]
			next := moves[p][v]
			if nv, ok := viewOf[next]; !ok || !slices.Contains(nv, p) {
				continue // p does not install the next view
			}
			for _, q := range tp.members {
				tq, ok := trans[q][v]
				if q == p || !ok || moves[q][v] != next || p.ID > q.ID {
					continue
				}
				if !sameMembers(tp.members, tq.members) {
					report(&mcast.Violation{Text: fmt.Sprintf("transitional set (11): members %d/%d and %d/%d install view %d from view %d with transitional sets %v and %v", p.ID, p.Inc, q.ID, q.Inc, next, v, tp.members, tq.members),
						Evidence: []mcast.Evidence{{Member: p.ID, Line: tp.at, What: fmt.Sprintf("transitional %d", v)}, {Member: q.ID, Line: tq.at, What: fmt.Sprintf("transitional %d", v)}}})
				}
			}
		}
	}
	type pv struct {
		p Member
		v uint64
	}
	sets := map[pv]map[vmsg]int{}
	for _, p := range procs {
		if !safe {
			break
		}
		trans := map[uint64]bool{}
		for i, r := range logs[p] {
			if r.Kind == VTransitional {
				trans[r.View] = true
			}
			if r.Kind != VDeliver || trans[r.View] {
				continue
			}
			k := vmsg{r.View, r.Sender, r.Seq}
			for _, q := range procs {
				if q == p || !correct(q, r.View) {
					continue
				}
				set, ok := sets[pv{q, r.View}]
				if !ok {
					set = setOf(q, r.View)
					sets[pv{q, r.View}] = set
				}
				if _, ok := set[k]; !ok {
					report(&mcast.Violation{Text: fmt.Sprintf("safe delivery: member %d/%d delivered %v before view %d's transitional configuration; member %d/%d went through the view without it", p.ID, p.Inc, k, r.View, q.ID, q.Inc),
						Evidence: []mcast.Evidence{ev(p, i, "deliver "+k.String()), {Member: q.ID, Line: 0, What: "never delivers " + k.String() + " in view " + fmt.Sprint(r.View)}}})
					break
				}
			}
		}
	}
	// Agreement among the members that end together in one view.
	for ai, a := range procs {
		va := lastView(a)
		if !final[a] || va == 0 {
			continue
		}
		for _, b := range procs[ai+1:] {
			if !final[b] || lastView(b) != va {
				continue
			}
			sb := setOf(b, va)
			for _, d := range dels[a][va] { // in a's order: the report is the same from run to run
				if _, ok := sb[d.k]; !ok {
					report(&mcast.Violation{Text: fmt.Sprintf("agreement: members %d/%d and %d/%d end in view %d; only the first delivered %v", a.ID, a.Inc, b.ID, b.Inc, va, d.k),
						Evidence: []mcast.Evidence{{Member: a.ID, Line: d.at, What: "deliver " + d.k.String()}, {Member: b.ID, Line: 0, What: "never delivers " + d.k.String()}}})
				}
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	best := slices.MinFunc(found, func(a, b *mcast.Violation) int { return len(a.Evidence) - len(b.Evidence) })
	best.Found = len(found)
	if collided {
		best.Text += fmt.Sprintf(" (two components numbered views alike: view N of another leader is shown as N + k·2^%d)", viewBits)
	}
	return best
}

// subset reports whether every member of a is in b.
func subset(a, b []Member) bool {
	for _, m := range a {
		if !slices.Contains(b, m) {
			return false
		}
	}
	return true
}

// sameMembers reports whether a and b hold the same members.
func sameMembers(a, b []Member) bool {
	return len(a) == len(b) && subset(a, b) && subset(b, a)
}
