package mcastd

import (
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// GroupOptions is what a user chooses for a dynamic group member ('mcast
// run --views', 'mcast bench --order total'), typed.
type GroupOptions struct {
	Total group.Total // the total order (TotalNone: FIFO views)
	Safe  bool
	EVS   bool // --partitions evs
	Found bool // create the group now
	// Join: the members to join through (nil: every other peer).
	Join []node.ID
	// StartWith: hold the first lines until a view has this many members
	// (negative: every peer; 0: send at once).
	StartWith int
	// Period and Suspect: 0 for the group's defaults.
	Period, Suspect time.Duration
}

// NewGroupConfig is the machine's configuration for member self
// (incarnation inc) among peers (self included), with options o.
func NewGroupConfig(self node.ID, inc uint64, peers []node.ID, o GroupOptions) (group.Config, error) {
	if !slices.Contains(peers, self) {
		return group.Config{}, fmt.Errorf("member %d is not among the peers %v", self, peers)
	}
	contacts := slices.DeleteFunc(slices.Clone(peers), func(id node.ID) bool { return id == self })
	if o.Join != nil {
		contacts = nil
		for _, id := range o.Join {
			if !slices.Contains(peers, id) || id == self {
				return group.Config{}, fmt.Errorf("--join: %d is not another member in --peers", id)
			}
			contacts = append(contacts, id)
		}
	}
	if o.Period < 0 || o.Suspect < 0 {
		return group.Config{}, fmt.Errorf("--period and --suspect must be positive")
	}
	cfg := group.Config{ID: self, Inc: inc, Found: o.Found, Contacts: contacts, Total: o.Total, Safe: o.Safe, EVS: o.EVS,
		StartWith: len(peers), Period: o.Period, Suspect: o.Suspect}
	if o.StartWith >= 0 {
		cfg.StartWith = o.StartWith
	}
	if !cfg.Found {
		// Nobody answers after a while: there is no group yet, and the
		// lowest ID creates it (the next one a while later, and so on).
		rank := slices.Index(peers, self)
		cfg.FoundAfter = time.Duration(3*(rank+1)) * group.Config{Period: cfg.Period, Suspect: cfg.Suspect}.SuspectTime()
	}
	return cfg, nil
}
