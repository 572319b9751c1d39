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
// or naming no interface or alias of the node, is an error.
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
