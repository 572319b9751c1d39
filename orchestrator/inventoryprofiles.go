package orchestrator

import (
	"maps"
	"slices"

	"github.com/slipway-dev/slipway/drivers"
)

// ProfileNode is one node for DiffProfiles: its hardware profile and
// what commissioning found on its machine (nil when it was not
// commissioned yet).
type ProfileNode struct {
	Node, Profile string
	Inventory     *drivers.Inventory
}

// ProfileDiff is one hardware profile's comparison: how many of its
// nodes have an inventory, which have none yet, and the facts in which a
// node differs from the majority of the others (InventoryDiff).
type ProfileDiff struct {
	Profile        string            `json:"profile"`
	Nodes          int               `json:"nodes"`           // with an inventory
	NotInventoried []string          `json:"not_inventoried"` // not commissioned yet
	OddOnesOut     []InventoryOddity `json:"odd_ones_out"`
}

// DiffProfiles groups the nodes by hardware profile (only's nodes alone,
// when only is set) and compares the inventories within each profile,
// ordered by profile. Not commissioned nodes are listed in the order
// given. None when no node has only's profile.
func DiffProfiles(nodes []ProfileNode, only string) []ProfileDiff {
	byProfile := map[string]*ProfileDiff{}
	invs := map[string]map[string]drivers.Inventory{}
	for _, n := range nodes {
		hw := n.Profile
		if only != "" && hw != only {
			continue
		}
		pd := byProfile[hw]
		if pd == nil {
			pd = &ProfileDiff{Profile: hw, NotInventoried: []string{}, OddOnesOut: []InventoryOddity{}}
			byProfile[hw], invs[hw] = pd, map[string]drivers.Inventory{}
		}
		if n.Inventory == nil {
			pd.NotInventoried = append(pd.NotInventoried, n.Node)
			continue
		}
		pd.Nodes++
		invs[hw][n.Node] = *n.Inventory
	}
	var out []ProfileDiff
	for _, hw := range slices.Sorted(maps.Keys(byProfile)) {
		pd := byProfile[hw]
		pd.OddOnesOut = append(pd.OddOnesOut, InventoryDiff(invs[hw])...)
		out = append(out, *pd)
	}
	return out
}
