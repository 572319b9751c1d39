package design

import "cmp"

// Matches reports whether the filter selects the node. An absent filter
// selects every node. Every given criterion must match: names and racks
// match when the node's is listed, tags when the node has any listed tag,
// labels when the node has every listed label with the same value, sites
// when the node's Site is listed.
func (f *NodeFilter) Matches(n *Node) bool {
	if f == nil {
		return true
	}
	if len(f.Names) > 0 && !contains(f.Names, n.Metadata.Name) {
		return false
	}
	if len(f.Racks) > 0 && !contains(f.Racks, n.Spec.Rack) {
		return false
	}
	if len(f.Sites) > 0 && !contains(f.Sites, cmp.Or(n.SiteName, n.Spec.Site)) {
		return false
	}
	if len(f.Tags) > 0 {
		any := false
		for _, t := range f.Tags {
			if contains(n.Spec.Tags, t) {
				any = true
				break
			}
		}
		if !any {
			return false
		}
	}
	for k, want := range f.Labels {
		if got, ok := n.Metadata.Labels[k]; !ok || got != want {
			return false
		}
	}
	return true
}

// BootActionsFor returns the names of the boot actions that target a node.
func (d *Design) BootActionsFor(n *Node) []string {
	var out []string
	for _, name := range sortedNames(d.BootActions) {
		if d.BootActions[name].Spec.NodeFilter.Matches(n) {
			out = append(out, name)
		}
	}
	return out
}
