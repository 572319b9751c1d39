package driverspec

import (
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// nodeFabric is what Site site's fabric says of node n's ports: the
// switch VLAN of the network it PXE-boots on, the quarantine VLAN and
// its PXE interface. nil when the Site declares no switches, so that a
// node of a Site without a fabric is what it was before fabrics.
func nodeFabric(d *design.Design, n *design.Node, site *design.Site) *drivers.NodeFabric {
	if !site.HasFabric() {
		return nil
	}
	f := &drivers.NodeFabric{QuarantineVLAN: site.Spec.Fabric.QuarantineVLAN}
	iface, net := d.PXEInterface(n)
	f.PXEInterface = iface
	if nw := d.Networks[net]; nw != nil {
		f.ProvisioningVLAN = nw.SwitchVLAN()
	}
	return f
}

// Ports is the configuration of node n's cabled switch ports in phase
// (drivers.PortPlan of the node's driver spec); none for a node of a
// Site without a fabric.
func Ports(d *design.Design, n *design.Node, phase drivers.Phase) ([]drivers.PortConfig, error) {
	return drivers.PortPlan(Node(d, n, ""), phase)
}

// Switches are the endpoints of every switch of every Site's fabric,
// the password of each resolved by resolve (a secret reference to its
// value); a reference that does not resolve is resolve's error, which
// names the switch and never the secret.
func Switches(d *design.Design, resolve func(sw design.SiteSwitch) (drivers.Secret, error)) ([]drivers.SwitchEndpoint, error) {
	var out []drivers.SwitchEndpoint
	for _, sw := range d.AllSwitches() {
		e := drivers.SwitchEndpoint{Name: sw.Name, Address: sw.Address, Username: sw.Username, Settings: sw.Settings}
		if sw.Password != "" && resolve != nil {
			p, err := resolve(sw)
			if err != nil {
				return nil, err
			}
			e.Password = p
		}
		out = append(out, e)
	}
	return out, nil
}

// NetworkConfig is a network driver's Config carrying switches: their
// settings and password secrets (drivers.SwitchSettings), besides base's.
func NetworkConfig(base drivers.Config, switches []drivers.SwitchEndpoint) drivers.Config {
	out := drivers.Config{Settings: map[string]string{}, Secrets: map[string]drivers.Secret{}}
	for k, v := range base.Settings {
		out.Settings[k] = v
	}
	for k, v := range base.Secrets {
		out.Secrets[k] = v
	}
	for _, e := range switches {
		drivers.SwitchSettings(e, out.Settings, out.Secrets)
	}
	return out
}
