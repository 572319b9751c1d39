package driverspec

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// RoCEAddress is a RoCE assignment of one of a node's NICs: Interface
// names it (a device alias of its hardware profile, or one of its
// interfaces), CIDR is its address with the prefix (a /31 or /30).
type RoCEAddress struct {
	Interface string
	CIDR      string
}

// RoCESubnetName names the point-to-point subnet of a RoCE prefix.
func RoCESubnetName(p netip.Prefix) string {
	return "roce-" + strings.NewReplacer(".", "-", "/", "-").Replace(p.Masked().String())
}

// AddRoCE puts the node's RoCE addresses on its interfaces: on the design
// interface of that name, or on the unbonded interface that holds the
// device alias, as a point-to-point network besides its own; a device
// alias no interface holds becomes an interface of its own named like the
// alias, carrying only its RoCE network. An address on a bond's member,
// on an interface whose untagged network takes DHCP of the address's
// family (the provisioner would drop the DHCP link), or naming no
// interface or alias of the node, is an error. The engine builds a node's
// deploy spec with it and the RoCE upsert checks assignments with it
// (CheckRoCE), so what is stored is what a deploy can carry.
func AddRoCE(dn *drivers.Node, hw *design.HardwareProfileSpec, addrs []RoCEAddress) error {
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.CIDR)
		if err != nil {
			return fmt.Errorf("RoCE address %s of %s: %w", a.CIDR, a.Interface, err)
		}
		net := drivers.InterfaceNetwork{Subnet: drivers.Subnet{Name: RoCESubnetName(p), CIDR: p.Masked().String()},
			Address: p.Addr().String(), PointToPoint: true}
		if err := addRoCE(dn, hw, a.Interface, net); err != nil {
			return err
		}
	}
	return nil
}

func addRoCE(dn *drivers.Node, hw *design.HardwareProfileSpec, name string, net drivers.InterfaceNetwork) error {
	for i := range dn.Interfaces {
		in := &dn.Interfaces[i]
		holds := slices.ContainsFunc(in.Devices, func(d drivers.Device) bool { return d.Alias == name })
		switch {
		case in.Name == name, holds && !in.Link.Bonded():
			if dhcp := untaggedDHCP(*in); dhcp != nil && isV4(dhcp.CIDR) == isV4(net.CIDR) {
				return fmt.Errorf("RoCE address %s is on %s, interface %s, whose untagged network %s takes DHCP: a static address beside it would drop its DHCP link; put the address on a NIC without DHCP",
					net.Address, name, in.Name, dhcp.Name)
			}
			net.MTU = in.Link.MTU
			in.Networks = append(in.Networks, net)
			return nil
		case holds:
			return fmt.Errorf("RoCE address %s is on %s, a member of bonded interface %s: assign it to %s instead", net.Address, name, in.Name, in.Name)
		}
	}
	if hw == nil || hw.DeviceAliases[name].Address == "" {
		return fmt.Errorf("RoCE address %s names %s, which is neither an interface nor a device alias of the node", net.Address, name)
	}
	dn.Interfaces = append(dn.Interfaces, drivers.Interface{Name: name, Link: drivers.Link{Name: "roce-" + name},
		Devices: []drivers.Device{device(hw, name)}, Networks: []drivers.InterfaceNetwork{net}})
	return nil
}

// CheckRoCE reports whether node n of d can carry addrs: it builds the
// node's interfaces as a deploy does and adds the addresses with AddRoCE.
func CheckRoCE(d *design.Design, n *design.Node, addrs []RoCEAddress) error {
	dn := Node(d, n, "")
	return AddRoCE(&dn, n.Spec.Hardware, addrs)
}

// untaggedDHCP is the interface's untagged network when it is addressed
// by DHCP (nil otherwise): on an 802.1q trunk its native network, else
// its one network.
func untaggedDHCP(in drivers.Interface) *drivers.InterfaceNetwork {
	for i := range in.Networks {
		nw := &in.Networks[i]
		if nw.PointToPoint || in.Link.Trunking == "802.1q" && nw.Name != in.Link.NativeNetwork {
			continue
		}
		if nw.Address == "dhcp" {
			return nw
		}
		return nil
	}
	return nil
}

func isV4(cidr string) bool {
	p, err := netip.ParsePrefix(cidr)
	return err == nil && p.Addr().Is4()
}
