package design

import (
	"reflect"
	"slices"
)

// Several Sites: a design may hold one Site per provisioner region (a
// MAAS site), each binding to the site record of its name. The first
// Site by name (Design.Site) holds the settings that apply design-wide
// (introspection, lifecycle, reconciliation, hardwareTags, defaults); the
// others hold only what is theirs (domain, DNS, NTP, SSH keys, drivers,
// maas). Every node names its Site (spec.site, from its host profile or
// its own) when there are several; with one, nodes belong to it.

// RuleSite: a node's site, and what a second Site may set.
const RuleSite = "site"

// SiteNames returns the design's Sites' names, sorted (the first is
// Design.Site's).
func (d *Design) SiteNames() []string {
	if len(d.Sites) == 0 {
		if d.Site == nil {
			return nil
		}
		return []string{d.Site.Metadata.Name}
	}
	return sortedNames(d.Sites)
}

// SiteNamed returns the Site called name, nil when there is none.
func (d *Design) SiteNamed(name string) *Site {
	if len(d.Sites) == 0 {
		if d.Site != nil && d.Site.Metadata.Name == name {
			return d.Site
		}
		return nil
	}
	return d.Sites[name]
}

// SiteOf returns the Site node n belongs to: the one it names, else the
// design's only Site.
func (d *Design) SiteOf(n *Node) *Site {
	if n != nil && n.Spec.Site != "" {
		if s := d.SiteNamed(n.Spec.Site); s != nil {
			return s
		}
	}
	return d.Site
}

// SiteNameOf returns the name of the Site node n belongs to.
func (d *Design) SiteNameOf(n *Node) string {
	if s := d.SiteOf(n); s != nil {
		return s.Metadata.Name
	}
	return ""
}

// NodesOfSite returns the names of the nodes of Site site, sorted.
func (d *Design) NodesOfSite(site string) []string {
	var out []string
	for _, name := range sortedNames(d.Nodes) {
		if d.SiteNameOf(d.Nodes[name]) == site {
			out = append(out, name)
		}
	}
	return out
}

// nameSites sets each node's SiteName.
func (d *Design) nameSites() {
	for _, n := range d.Nodes {
		n.SiteName = d.SiteNameOf(n)
	}
}

// sites checks what several Sites need: each node names one of them, and
// only the first sets the design-wide settings.
func (v *validator) sites() {
	names := v.d.SiteNames()
	for _, n := range sortedNames(v.d.Nodes) {
		node := v.d.Nodes[n]
		switch s := node.Spec.Site; {
		case s != "" && v.d.SiteNamed(s) == nil:
			v.r.errorf(RuleSite, KindNode, n, node.Spec.SitePos, "site %q is not a Site of the design (it has %v)", s, names)
		case s == "" && len(names) > 1:
			v.r.errorf(RuleSite, KindNode, n, node.Metadata.Pos, "the design has several Sites (%v): name the node's in spec.site (or its host profile's)", names)
		}
	}
	for _, name := range names[min(1, len(names)):] {
		s := v.d.Sites[name]
		for _, f := range designWide(s) {
			v.r.errorf(RuleSite, KindSite, name, s.Metadata.Pos, "%s applies design-wide: set it on the first Site, %s", f, names[0])
		}
	}
}

// designWide names the design-wide settings s sets.
func designWide(s *Site) []string {
	var out []string
	sp := s.Spec
	if sp.Introspection != (IntrospectionConfig{}) {
		out = append(out, "introspection")
	}
	if !isZero(sp.Lifecycle) {
		out = append(out, "lifecycle")
	}
	if !isZero(sp.Reconciliation) {
		out = append(out, "reconciliation")
	}
	if len(sp.HardwareTags) > 0 {
		out = append(out, "hardwareTags")
	}
	if !isZero(sp.Defaults) {
		out = append(out, "defaults")
	}
	return slices.Clip(out)
}

func isZero(v any) bool { return reflect.ValueOf(v).IsZero() }
