package maas

import (
	"context"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// Inventory reads the machine's physical interfaces and ties the node's
// NIC aliases to them (through the node devices or the commissioning
// details, as configuring does). A NIC's Name is MAAS's name of it when
// read: right after commissioning, the kernel name (ApplyNetworking later
// renames only NICs that carry an interface on their own, never bond
// members).
func (d *Driver) Inventory(ctx context.Context, n drivers.Node) (drivers.Inventory, error) {
	if n.MachineID == "" {
		return drivers.Inventory{}, drivers.Errorf(drivers.Permanent, "maas: inventory of node %s: the node has no machine yet (identify it first)", n.Name)
	}
	m, err := d.machine(ctx, n.MachineID, partInterfaces)
	if err != nil {
		return drivers.Inventory{}, err
	}
	var devs []drivers.Device
	for _, in := range n.Interfaces {
		devs = append(devs, in.Devices...)
	}
	names, err := d.resolveDevices(ctx, m.SystemID, devs, false)
	if err != nil {
		return drivers.Inventory{}, err
	}
	alias := map[string]string{} // MAC or MAAS name → alias
	for a, r := range names {
		if p := findPhysical(m.Interfaces, r); p != nil {
			alias[strings.ToLower(p.MAC)] = a
		}
	}
	inv := drivers.Inventory{MachineID: m.SystemID, NICs: []drivers.NIC{}}
	for _, i := range m.Interfaces {
		if i.Type != "physical" {
			continue
		}
		mac := strings.ToLower(i.MAC)
		inv.NICs = append(inv.NICs, drivers.NIC{Alias: alias[mac], Name: i.Name, MAC: mac})
	}
	for a, r := range names {
		if _, ok := inv.NIC(a); !ok {
			return drivers.Inventory{}, drivers.Errorf(drivers.Permanent, "maas: machine %s has no physical interface %s for device %s of node %s", m.SystemID, r.Name, a, n.Name)
		}
	}
	return inv, nil
}
