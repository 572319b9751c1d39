package driverspec

import (
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// Sites are what the server driver prepares, one SiteSpec per Site of the
// design (named). With one Site it is Site(d); with several, each Site's
// spec holds its own domain and SSH keys and only the networks and links
// its nodes use, and its PXE network is chosen among its nodes (Site's
// rule).
func Sites(d *design.Design) []drivers.SiteSpec {
	names := d.SiteNames()
	if len(names) < 2 {
		s := Site(d)
		if len(names) == 1 {
			s.Name = names[0]
		}
		return []drivers.SiteSpec{s}
	}
	out := make([]drivers.SiteSpec, 0, len(names))
	for _, name := range names {
		s := Site(siteView(d, name))
		s.Name = name
		out = append(out, s)
	}
	return out
}

// siteView is d cut down to Site name: its nodes, the networks and links
// they use, the Site itself as the design's.
func siteView(d *design.Design, name string) *design.Design {
	v := *d
	v.Site, v.Sites = d.SiteNamed(name), nil
	v.Nodes = map[string]*design.Node{}
	v.Networks = map[string]*design.Network{}
	v.NetworkLinks = map[string]*design.NetworkLink{}
	for _, nn := range d.NodesOfSite(name) {
		n := d.Nodes[nn]
		v.Nodes[nn] = n
		for _, a := range n.Spec.Addressing {
			addNetwork(&v, d, a.Network)
		}
		for _, in := range n.Spec.Interfaces {
			if l := d.NetworkLinks[in.Link]; l != nil {
				v.NetworkLinks[in.Link] = l
			}
			for _, nw := range in.Networks {
				addNetwork(&v, d, nw)
			}
		}
	}
	return &v
}

func addNetwork(v, d *design.Design, name string) {
	if nw := d.Networks[name]; nw != nil {
		v.Networks[name] = nw
	}
}
