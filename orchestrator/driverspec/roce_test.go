package driverspec_test

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

func TestAddRoCE(t *testing.T) {
	hw := &design.HardwareProfileSpec{DeviceAliases: map[string]design.DeviceAlias{
		"pxe0": {Bus: "pci", Address: "0000:04:00.0"}, "data0": {Bus: "pci", Address: "0000:3b:00.0"},
		"data1": {Bus: "pci", Address: "0000:3b:00.1"}, "gpu-nic0": {Bus: "pci", Address: "0000:9a:00.0"}}}
	node := func() drivers.Node {
		return drivers.Node{Interfaces: []drivers.Interface{
			{Name: "pxe", Link: drivers.Link{Name: "pxe-link", MTU: 1500}, Devices: []drivers.Device{{Alias: "pxe0"}}},
			{Name: "bond0", Link: drivers.Link{Name: "data", MTU: 9000, BondMode: "802.3ad"}, Devices: []drivers.Device{{Alias: "data0"}, {Alias: "data1"}}},
		}}
	}
	n := node()
	err := driverspec.AddRoCE(&n, hw, []driverspec.RoCEAddress{{Interface: "bond0", CIDR: "10.250.0.1/31"},
		{Interface: "pxe0", CIDR: "10.250.0.2/31"}, {Interface: "gpu-nic0", CIDR: "10.250.0.5/30"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Interfaces[1].Networks; len(got) != 1 || got[0].CIDR != "10.250.0.0/31" || got[0].Address != "10.250.0.1" || !got[0].PointToPoint ||
		got[0].MTU != 9000 || got[0].Name != "roce-10-250-0-0-31" {
		t.Errorf("bond0: %+v", got)
	}
	if got := n.Interfaces[0].Networks; len(got) != 1 || got[0].CIDR != "10.250.0.2/31" {
		t.Errorf("pxe (by its NIC's alias): %+v", got)
	}
	if len(n.Interfaces) != 3 || n.Interfaces[2].Name != "gpu-nic0" || n.Interfaces[2].Devices[0].Address != "0000:9a:00.0" ||
		n.Interfaces[2].Networks[0].CIDR != "10.250.0.4/30" {
		t.Errorf("a bare NIC: %+v", n.Interfaces)
	}
	for what, c := range map[string]struct{ addr, want string }{
		"bond member": {"data1", "member of bonded interface bond0"},
		"unknown":     {"eth9", "neither an interface nor a device alias"},
	} {
		n := node()
		err := driverspec.AddRoCE(&n, hw, []driverspec.RoCEAddress{{Interface: c.addr, CIDR: "10.250.0.1/31"}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", what, err)
		}
	}
	// On an interface whose untagged network takes DHCP (by the interface's
	// name or its NIC's alias): refused, as the provisioner would.
	for _, name := range []string{"pxe", "pxe0"} {
		n := node()
		n.Interfaces[0].Networks = []drivers.InterfaceNetwork{{Subnet: drivers.Subnet{Name: "pxe", CIDR: "10.10.0.0/24"}, Address: "dhcp"}}
		err := driverspec.AddRoCE(&n, hw, []driverspec.RoCEAddress{{Interface: name, CIDR: "10.250.0.1/31"}})
		if err == nil || !strings.Contains(err.Error(), "takes DHCP") {
			t.Errorf("on the DHCP interface (%s): %v", name, err)
		}
	}
}
