package group

import "github.com/roundtable-go/roundtable/pkg/mcast"

// The wire bounds and the data frame's budget are the reliable layer's
// (pkg/mcast): both groups' frames carry mcast.Item.
const (
	maxItems   = mcast.MaxItems
	maxMembers = mcast.MaxMembers
	maxSeq     = mcast.MaxSeq
	budget     = mcast.FrameBudget
)
