package design

import "slices"

// Fabric is a Site's switch fabric: the switches its nodes' cabling
// names, how the network driver reaches each, and the VLAN ports go to
// when no machine should use them.
type Fabric struct {
	// QuarantineVLAN is the VLAN of a port whose node left service
	// (released, decommissioned) and of a node's other ports while it
	// PXE-boots; required when Switches are declared.
	QuarantineVLAN int `json:"quarantine_vlan,omitempty" yaml:"quarantineVlan"`
	// Switches by name: the name cabling gives (the switch's LLDP system
	// name).
	Switches map[string]Switch `json:"switches,omitempty"`

	Pos               Pos `json:"-"`
	QuarantineVLANPos Pos `json:"-" pos:"quarantineVlan"`
	SwitchesPos       Pos `json:"-" pos:"switches"`
}

// Switch is how the network driver reaches one switch. Address is
// driver-specific (ovs: unix:PATH or tcp:HOST:PORT; gnmi: HOST:PORT);
// Password is a secret reference; Settings are the driver's own.
type Switch struct {
	Address  string            `json:"address" required:"true"`
	Username string            `json:"username,omitempty"`
	Password string            `json:"password,omitempty"`
	Settings map[string]string `json:"settings,omitempty"`

	Pos         Pos `json:"-"`
	PasswordPos Pos `json:"-" pos:"password"`
}

// SiteSwitch is one switch of a Site's fabric, named.
type SiteSwitch struct {
	Site string
	Name string
	Switch
}

// SwitchesOf lists the switches of Site site's fabric, by name (none
// for a Site without a fabric or that the design does not have).
func (d *Design) SwitchesOf(site string) []SiteSwitch {
	s := d.SiteNamed(site)
	if s == nil {
		return nil
	}
	var out []SiteSwitch
	for _, name := range sortedNames(s.Spec.Fabric.Switches) {
		out = append(out, SiteSwitch{Site: site, Name: name, Switch: s.Spec.Fabric.Switches[name]})
	}
	return out
}

// AllSwitches lists the switches of every Site, by Site then name.
func (d *Design) AllSwitches() []SiteSwitch {
	var out []SiteSwitch
	for _, site := range d.SiteNames() {
		out = append(out, d.SwitchesOf(site)...)
	}
	return slices.Clip(out)
}

// HasFabric reports whether Site s declares fabric switches.
func (s *Site) HasFabric() bool { return s != nil && len(s.Spec.Fabric.Switches) > 0 }

// SwitchVLAN is the VLAN switches carry the network on: its vlan when
// tagged, else its switchVlan (0: none).
func (n *Network) SwitchVLAN() int {
	if n.Spec.VLAN != 0 {
		return n.Spec.VLAN
	}
	return n.Spec.SwitchVLAN
}

// PXEInterface is the interface node n PXE-boots on (the one holding its
// hardware profile's pxe.interface device) and the network it carries
// there untagged: its link's native network on an 802.1q trunk, else its
// first network. Both are "" when the design does not say.
func (d *Design) PXEInterface(n *Node) (iface, network string) {
	if n == nil || n.Spec.Hardware == nil || n.Spec.Hardware.PXE.Interface == "" {
		return "", ""
	}
	dev := n.Spec.Hardware.PXE.Interface
	for _, name := range sortedNames(n.Spec.Interfaces) {
		in := n.Spec.Interfaces[name]
		if slices.Contains(in.Devices, dev) {
			return name, d.UntaggedNetwork(in)
		}
	}
	return "", ""
}

// UntaggedNetwork is the network interface in carries untagged: its
// link's native network on an 802.1q trunk, else its first network ("":
// none the design has).
func (d *Design) UntaggedNetwork(in Interface) string {
	net := ""
	if l := d.NetworkLinks[in.Link]; l != nil && l.Spec.Trunking.Mode == "802.1q" {
		net = l.Spec.Trunking.NativeNetwork
	} else if len(in.Networks) > 0 {
		net = in.Networks[0]
	}
	if d.Networks[net] == nil {
		return ""
	}
	return net
}
