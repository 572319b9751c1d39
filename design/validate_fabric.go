package design

import (
	"fmt"
	"strings"
	"unicode"
)

// RuleFabric checks the switch fabric: each Site's fabric (a quarantine
// VLAN in 1..4094 that no network uses when switches are declared, a
// switch declared in one Site only, settings the network driver can
// read, a password that is a secret reference, switches when the network
// driver is not noop), the networks' switchVlan (untagged networks only,
// in 1..4094, one network per switch VLAN) and each cabled node of a
// Site with a fabric (switches the fabric declares, a PXE interface, a
// switch VLAN for every untagged network of a cabled interface and for
// the network the node PXE-boots on).
const RuleFabric = "fabric"

// The switch settings the network driver reads itself (drivers.Switches).
var reservedSwitchSettings = []string{"address", "username", "password"}

// fabric runs RuleFabric's checks.
func (v *validator) fabric() {
	vlans := v.switchVLANs()
	owner := map[string]string{}
	for _, name := range v.d.SiteNames() {
		v.siteFabric(v.d.SiteNamed(name), vlans, owner)
	}
	need := map[string]fabricUse{}
	for _, n := range sortedNames(v.d.Nodes) {
		v.nodeFabric(v.d.Nodes[n], need)
	}
	for _, nw := range sortedNames(need) {
		u := need[nw]
		net := v.d.Networks[nw]
		v.r.errorf(RuleFabric, KindNetwork, nw, net.Metadata.Pos,
			"network %s is %s but has no switch VLAN: add spec.switchVlan (the VLAN the switches carry it on untagged)", nw, u)
	}
}

// switchVLANs checks the networks' switchVlan and maps each switch VLAN
// to the first network (by name) on it.
func (v *validator) switchVLANs() map[int]string {
	byVLAN := map[int]string{}
	for _, name := range sortedNames(v.d.Networks) {
		s := &v.d.Networks[name].Spec
		if !s.SwitchVLANPos.Usable() {
			continue
		}
		pos := s.SwitchVLANPos
		switch {
		case s.VLAN != 0:
			v.r.errorf(RuleFabric, KindNetwork, name, pos,
				"switchVlan %d on a tagged network: the switches carry it on its vlan %d; remove switchVlan", s.SwitchVLAN, s.VLAN)
		case s.SwitchVLAN < 1 || s.SwitchVLAN > 4094:
			v.r.errorf(RuleFabric, KindNetwork, name, pos, "switchVlan %d is outside 1..4094", s.SwitchVLAN)
		}
	}
	// Tagged networks first, so that a switchVlan on another's VLAN is
	// the one reported (two tagged networks on one VLAN are the vlan
	// rule's).
	for _, tagged := range []bool{true, false} {
		for _, name := range sortedNames(v.d.Networks) {
			n := v.d.Networks[name]
			sv := n.SwitchVLAN()
			if sv == 0 || (n.Spec.VLAN != 0) != tagged {
				continue
			}
			if first, dup := byVLAN[sv]; !dup {
				byVLAN[sv] = name
			} else if !tagged {
				v.r.errorf(RuleFabric, KindNetwork, name, n.Spec.SwitchVLANPos,
					"switchVlan %d is already network %s's VLAN on the switches: two networks cannot share one", sv, first)
			}
		}
	}
	return byVLAN
}

// siteFabric checks one Site's fabric; vlans maps switch VLANs to their
// network, owner records the Site of each switch name.
func (v *validator) siteFabric(s *Site, vlans map[int]string, owner map[string]string) {
	name, f := s.Metadata.Name, &s.Spec.Fabric
	if !s.HasFabric() {
		if drv := s.Spec.Drivers.Network; drv != "" && drv != "noop" {
			v.r.errorf(RuleFabric, KindSite, name, orPos(s.Spec.Drivers.NetworkPos, s.Metadata.Pos),
				"network driver %s configures switch ports but the Site declares no fabric.switches; declare them or use network: noop", drv)
		}
		return
	}
	qpos := orPos(f.QuarantineVLANPos, orPos(f.Pos, s.Metadata.Pos))
	switch q := f.QuarantineVLAN; {
	case f.QuarantineVLANPos.Invalid:
	case q == 0:
		v.r.errorf(RuleFabric, KindSite, name, qpos, "fabric.quarantineVlan is required with fabric.switches: the VLAN released nodes' ports go to")
	case q < 1 || q > 4094:
		v.r.errorf(RuleFabric, KindSite, name, qpos, "fabric.quarantineVlan %d is outside 1..4094", q)
	case vlans[q] != "":
		v.r.errorf(RuleFabric, KindSite, name, qpos, "fabric.quarantineVlan %d is network %s's switch VLAN: quarantine must be a VLAN no network uses", q, vlans[q])
	}
	for _, sw := range sortedNames(f.Switches) {
		v.switchDecl(name, sw, f.Switches[sw], orPos(f.SwitchesPos, orPos(f.Pos, s.Metadata.Pos)), owner)
	}
}

// switchDecl checks switch sw of Site site.
func (v *validator) switchDecl(site, sw string, spec Switch, def Pos, owner map[string]string) {
	pos := orPos(spec.Pos, def)
	if first, dup := owner[sw]; dup {
		v.r.errorf(RuleFabric, KindSite, site, pos, "fabric.switches.%s is already declared by Site %s: a switch belongs to one Site", sw, first)
	} else {
		owner[sw] = site
	}
	if !switchName(sw) {
		v.r.errorf(RuleFabric, KindSite, site, pos, "fabric.switches: %q is not a switch name (its LLDP system name: no ':', '/', spaces or control characters)", sw)
	}
	for _, k := range sortedNames(spec.Settings) {
		if strings.Contains(k, ".") || contains(reservedSwitchSettings, k) || k == "" {
			v.r.errorf(RuleFabric, KindSite, site, pos,
				"fabric.switches.%s.settings: key %.40q is not a setting name (no dots; address, username and password are fields of their own)", sw, k)
		}
	}
	if spec.Password != "" {
		v.secretRef(KindSite, site, orPos(spec.PasswordPos, pos), "fabric.switches."+sw+".password", spec.Password)
	}
}

// fabricUse says why a network needs a switch VLAN: the first node and
// interface that carries it untagged on a cabled port.
type fabricUse struct {
	node, iface string
	pxe         bool
}

func (u fabricUse) String() string {
	if u.pxe {
		return fmt.Sprintf("the network node %s PXE-boots on (interface %s)", u.node, u.iface)
	}
	return fmt.Sprintf("carried untagged on node %s's cabled interface %s", u.node, u.iface)
}

// nodeFabric checks a cabled node of a Site with a fabric: every switch
// its cabling names is the fabric's, and need records the networks that
// must have a switch VLAN.
func (v *validator) nodeFabric(n *Node, need map[string]fabricUse) {
	site := v.d.SiteOf(n)
	if !site.HasFabric() || len(n.Spec.Cabling) == 0 {
		return
	}
	name, s := n.Metadata.Name, &n.Spec
	for _, alias := range sortedNames(s.Cabling) {
		c := s.Cabling[alias]
		if _, ok := site.Spec.Fabric.Switches[c.Switch]; !ok && c.Switch != "" {
			v.r.errorf(RuleFabric, KindNode, name, orPos(c.Pos, orPos(s.CablingPos, n.Metadata.Pos)),
				"cabling.%s: switch %s is not one of Site %s's fabric.switches (%s)", alias, c.Switch, site.Metadata.Name,
				strings.Join(sortedNames(site.Spec.Fabric.Switches), ", "))
		}
	}
	pxeIf, pxeNet := v.d.PXEInterface(n)
	if pxeNet == "" {
		v.r.errorf(RuleFabric, KindNode, name, n.Metadata.Pos,
			"the node is cabled in Site %s, which has a fabric, but no interface carries its PXE device untagged (its hardware profile's pxe.interface, on an interface with an untagged network): its ports could not be put on the provisioning VLAN",
			site.Metadata.Name)
	} else if v.d.Networks[pxeNet].SwitchVLAN() == 0 {
		if _, seen := need[pxeNet]; !seen {
			need[pxeNet] = fabricUse{node: name, iface: pxeIf, pxe: true}
		}
	}
	for _, in := range sortedNames(s.Interfaces) {
		i := s.Interfaces[in]
		if !cabledInterface(s, i) {
			continue
		}
		for _, nw := range i.Networks {
			net := v.d.Networks[nw]
			if _, seen := need[nw]; net == nil || seen || net.SwitchVLAN() != 0 {
				continue
			}
			need[nw] = fabricUse{node: name, iface: in}
		}
	}
}

// cabledInterface reports whether one of i's devices is cabled.
func cabledInterface(s *NodeSpec, i Interface) bool {
	for _, dev := range i.Devices {
		if c, ok := s.Cabling[dev]; ok && c.Switch != "" && c.Port != "" {
			return true
		}
	}
	return false
}

// maxSwitchName bounds a switch's name and a port's (a DNS name's and
// an LLDP string's length).
const maxSwitchName = 255

// switchName reports whether s can name a switch: not empty, at most
// maxSwitchName bytes, no ':' (switch:port names a port in messages and
// keys), no '/', no whitespace or control character.
func switchName(s string) bool {
	return s != "" && len(s) <= maxSwitchName && !strings.ContainsFunc(s, func(r rune) bool {
		return r == ':' || r == '/' || unicode.IsSpace(r) || unicode.IsControl(r)
	})
}

// portName reports whether s can name a switch port: as a switch name,
// but '/' is allowed (Ethernet1/1 is how many switches name a port).
func portName(s string) bool {
	return switchName(strings.ReplaceAll(s, "/", "-"))
}

// cableNames checks a cable's switch and port names; false when one of
// them is refused (reported).
func (v *validator) cableNames(node, alias string, pos Pos, c Cable) bool {
	ok := true
	if !switchName(c.Switch) {
		v.r.errorf(RuleCabling, KindNode, node, pos, "cabling.%s: switch %.80q is not a switch name (no ':', '/', spaces or control characters)", alias, c.Switch)
		ok = false
	}
	if !portName(c.Port) {
		v.r.errorf(RuleCabling, KindNode, node, pos, "cabling.%s: port %.80q is not a port name (no ':', spaces or control characters)", alias, c.Port)
		ok = false
	}
	return ok
}
