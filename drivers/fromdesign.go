package drivers

import (
	"maps"
	"slices"

	"github.com/slipway-dev/slipway/design"
)

// SiteFromDesign returns the site-wide data a server driver prepares.
func SiteFromDesign(d *design.Design) SiteSpec {
	s := SiteSpec{}
	if d.Site != nil {
		s.Domain = d.Site.Spec.Domain
	}
	for _, name := range sortedKeys(d.Networks) {
		s.Subnets = append(s.Subnets, subnet(name, d.Networks[name]))
	}
	return s
}

func subnet(name string, n *design.Network) Subnet {
	out := Subnet{Name: name, CIDR: n.Spec.CIDR, VLAN: n.Spec.VLAN, MTU: n.Spec.MTU,
		Gateway: n.Spec.Gateway, DNSServers: n.Spec.DNS.Servers}
	for _, r := range n.Spec.Ranges {
		out.Ranges = append(out.Ranges, AddressPool{Type: r.Type, Start: r.Start, End: r.End})
	}
	return out
}

// NodeFromDesign returns what server and network drivers need of a node.
// machineID is the provisioner's ID when already known.
func NodeFromDesign(d *design.Design, n *design.Node, machineID string) Node {
	s := &n.Spec
	out := Node{
		NodeRef:    NodeRef{Name: n.Metadata.Name, MachineID: machineID},
		Hostname:   n.Metadata.Name,
		BootMAC:    s.BootMAC,
		BMCAddress: s.OOB.Address,
		Rack:       s.Rack,
		Primary:    s.PrimaryNetwork,
		Platform:   Platform{Image: s.Platform.Image, Kernel: s.Platform.Kernel, KernelParams: s.Platform.KernelParams},
		Tags:       s.Tags,
		OwnerData:  s.OwnerData,
	}
	if d.Site != nil {
		out.Domain = d.Site.Spec.Domain
	}
	addr := map[string]string{}
	for _, a := range s.Addressing {
		addr[a.Network] = a.Address
	}
	for _, name := range sortedKeys(s.Interfaces) {
		in := s.Interfaces[name]
		oi := Interface{Name: name, Link: Link{Name: in.Link}}
		if l := d.NetworkLinks[in.Link]; l != nil {
			b, t := l.Spec.Bonding, l.Spec.Trunking
			oi.Link = Link{Name: in.Link, MTU: l.Spec.MTU, BondMode: b.Mode, BondHash: b.Hash, LACPRate: b.LACPRate,
				MIIMon: b.MIIMon, UpDelay: b.UpDelay, DownDelay: b.DownDelay, Trunking: t.Mode, NativeNetwork: t.NativeNetwork}
		}
		for _, dev := range in.Devices {
			oi.Devices = append(oi.Devices, device(s.Hardware, dev))
		}
		for _, nn := range in.Networks {
			if net := d.Networks[nn]; net != nil {
				oi.Networks = append(oi.Networks, InterfaceNetwork{Subnet: subnet(nn, net), Address: addr[nn]})
			}
		}
		out.Interfaces = append(out.Interfaces, oi)
	}
	for _, name := range sortedKeys(s.Storage.Devices) {
		sd := s.Storage.Devices[name]
		od := StorageDevice{Device: device(s.Hardware, name), VolumeGroup: sd.VolumeGroup}
		for _, pn := range sortedKeys(sd.Partitions) {
			p := sd.Partitions[pn]
			od.Partitions = append(od.Partitions, Partition{Name: pn, Size: p.Size, Bootable: p.Bootable,
				Filesystem: filesystem(p.Filesystem), VolumeGroup: p.VolumeGroup})
		}
		out.Storage.Devices = append(out.Storage.Devices, od)
	}
	for _, vn := range sortedKeys(s.Storage.VolumeGroups) {
		vg := VolumeGroup{Name: vn}
		lvs := s.Storage.VolumeGroups[vn].LogicalVolumes
		for _, ln := range sortedKeys(lvs) {
			vg.LogicalVolumes = append(vg.LogicalVolumes, LogicalVolume{Name: ln, Size: lvs[ln].Size, Filesystem: filesystem(lvs[ln].Filesystem)})
		}
		out.Storage.VolumeGroups = append(out.Storage.VolumeGroups, vg)
	}
	return out
}

// BMCFromDesign returns how to reach a node's BMC; the password is the
// resolved secret its reference names.
func BMCFromDesign(d *design.Design, n *design.Node, password Secret) BMC {
	driver := "ipmi"
	if d.Site != nil {
		driver = d.Site.Spec.Drivers.OOB
	}
	ep := n.OOB(driver)
	return BMC{Node: n.Metadata.Name, Address: ep.Address, Port: ep.Port, Protocol: ep.Protocol,
		CipherSuite: ep.CipherSuite, Privilege: ep.Privilege, Username: ep.Username, Password: password}
}

func device(hw *design.HardwareProfileSpec, name string) Device {
	if hw != nil {
		if a, ok := hw.DeviceAliases[name]; ok {
			return Device{Alias: name, Bus: a.Bus, Address: a.Address}
		}
	}
	return Device{Alias: name}
}

func filesystem(f *design.Filesystem) *Filesystem {
	if f == nil {
		return nil
	}
	return &Filesystem{FSType: f.FSType, Mountpoint: f.Mountpoint, Options: f.Options, Label: f.Label}
}

func sortedKeys[T any](m map[string]T) []string {
	return slices.Sorted(maps.Keys(m))
}
