package ticket

import (
	"maps"
	"slices"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// RefoundJump is how far above the highest mark any member reported a
// pool founded again starts its epochs: twice a reclaim's jump, so that
// it is also above an epoch that a reclaim handed out just before every
// member stopped, whose mark reached nobody but its issuer's ring
// neighbours (doc.go, "Fencing across refounds").
const RefoundJump = 2 * epochJump

// ProbeAnswer is one member's answer to a refound probe (pkg/ticketd
// carries probes and answers between members).
type ProbeAnswer struct {
	// Out: none of the member's processes is in the core or on its way
	// in with a place granted, and none has a client.
	Out bool
	// Floor is the member's mark: the highest epoch it issued, saw or
	// read from its state file.
	Floor uint64
	// Members are the members in its address book.
	Members []node.ID
	// Durable: the member keeps its mark in a state file. Only such a
	// member founds, so only such a member's lower ID defers the prober.
	Durable bool
	// Taken: out, but its grants are promised to another prober
	// (Config.Quorum): it counts neither way.
	Taken bool
}

// Refound is the decision on one probe.
type Refound struct {
	// Found: the prober founds the pool again now.
	Found bool
	// Floor: the new pool's epochs start above it (Config.Floor of the
	// founder's Machine).
	Floor uint64
	// Blocking names the members that stop it: silent ones (one of them
	// may be the core), and ones with a lower ID (they found instead).
	Blocking []node.ID
	// Why says what stops it, for the log.
	Why string
}

const whyLower = "a member with a lower ID founds instead"

// DecideRefound decides whether member self, whose own mark is own, founds
// the pool again after asking every member in asked and hearing answers.
// durable says whether self keeps its mark in a state file.
//
// The rule (refounding.go has the argument that it cannot make two
// pools): every member asked answered "out", none of them named
// a member that was not asked, and self has the lowest ID of the members
// that keep a state file. Answers from members that were probed but not
// in asked (members the core excluded lately, AddressBook.Excluded: one
// may be alive and back in the core before the books take it back) stop
// it when they say "in", and raise the floor; their silence does not. The floor is
// RefoundJump above every mark heard: the pool starts strictly above the
// highest epoch any of them knows. A member without a state file never
// founds: after a restart its own mark is gone, and it cannot tell a
// pool that never handed out an epoch from one whose epochs it forgot
// (doc.go, "Fencing across refounds").
func DecideRefound(self node.ID, own uint64, durable bool, asked []node.ID, answers map[node.ID]ProbeAnswer) Refound {
	var silent, lower []node.ID
	floor := own
	unknown := node.None
	for _, id := range slices.Sorted(maps.Keys(answers)) {
		if a := answers[id]; !slices.Contains(asked, id) {
			if !a.Out {
				return Refound{Blocking: []node.ID{id}, Why: "a member is in the core"}
			}
			floor = max(floor, a.Floor)
		}
	}
	for _, id := range asked {
		a, ok := answers[id]
		switch {
		case !ok:
			silent = append(silent, id)
			continue
		case !a.Out:
			return Refound{Why: "a member is in the core"}
		case id < self && a.Durable:
			lower = append(lower, id)
		}
		for _, m := range a.Members {
			if m != self && !slices.Contains(asked, m) && unknown == node.None {
				unknown = m
			}
		}
		floor = max(floor, a.Floor)
	}
	switch {
	case len(silent) > 0:
		return Refound{Blocking: silent, Why: "no answer: the core may be there"}
	case unknown != node.None:
		return Refound{Blocking: []node.ID{unknown}, Why: "an answer names a member this one has not heard of yet"}
	case len(lower) > 0:
		return Refound{Blocking: lower, Why: whyLower}
	case !durable:
		return Refound{Why: "this member keeps no state file, so it does not found"}
	}
	return Refound{Found: true, Floor: min(floor, maxEpoch-RefoundJump) + RefoundJump}
}
