package designtest

import (
	"maps"
	"slices"

	"github.com/slipway-dev/slipway/design"
)

// FabricQuarantineVLAN is the quarantine VLAN Fabric gives every Site.
const FabricQuarantineVLAN = 999

// Fabric gives d a switch fabric, in place, for tests of the network
// role: every Site gets network driver driver, quarantine VLAN 999 and
// the switches its nodes' cabling names (address addr(name), "" when addr
// is nil: "tcp:127.0.0.1:1"); every untagged network switchVlan 100 + its
// index by name; every cabled node's PXE NIC, when not cabled, a cable to
// port "pxe-NODE" of its first cable's switch. It returns the switches'
// names, sorted.
func Fabric(d *design.Design, driver string, addr func(sw string) string) []string {
	names := slices.Sorted(maps.Keys(d.Networks))
	for i, name := range names {
		if n := d.Networks[name]; n.Spec.VLAN == 0 {
			n.Spec.SwitchVLAN = 100 + i
		}
	}
	perSite := map[string]map[string]bool{}
	for _, nn := range slices.Sorted(maps.Keys(d.Nodes)) {
		n := d.Nodes[nn]
		if len(n.Spec.Cabling) == 0 {
			continue
		}
		cabling := maps.Clone(n.Spec.Cabling)
		first := cabling[slices.Sorted(maps.Keys(cabling))[0]].Switch
		if hw := n.Spec.Hardware; hw != nil && hw.PXE.Interface != "" {
			if _, ok := cabling[hw.PXE.Interface]; !ok {
				cabling[hw.PXE.Interface] = design.Cable{Switch: first, Port: "pxe-" + nn}
			}
		}
		n.Spec.Cabling = cabling
		site := d.SiteNameOf(n)
		if perSite[site] == nil {
			perSite[site] = map[string]bool{}
		}
		for _, c := range cabling {
			perSite[site][c.Switch] = true
		}
	}
	var all []string
	for _, site := range d.SiteNames() {
		s := d.SiteNamed(site)
		s.Spec.Drivers.Network = driver
		s.Spec.Fabric = design.Fabric{QuarantineVLAN: FabricQuarantineVLAN, Switches: map[string]design.Switch{}}
		for sw := range perSite[site] {
			a := "tcp:127.0.0.1:1"
			if addr != nil {
				a = addr(sw)
			}
			s.Spec.Fabric.Switches[sw] = design.Switch{Address: a}
			all = append(all, sw)
		}
	}
	slices.Sort(all)
	return all
}
