package drivers

import (
	"maps"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/design"
)

// SiteFromDesign returns the site-wide data a server driver prepares: the
// networks, the links carrying them (a link's networks are its
// allowedNetworks; its NativeNetwork is the trunk's native network, or,
// on a link without 802.1q, its first network), the domain and the SSH
// keys.
//
// PXENetwork, the network machines PXE-boot on, is the first of:
//  1. for the first node (by name) whose hardware profile names a PXE
//     device, the network its interface with that device carries
//     untagged: the link's native network on an 802.1q trunk, else the
//     interface's first network;
//  2. the network named "pxe";
//  3. the native network, else the only network, of the first link (by
//     name) whose name contains "pxe".
func SiteFromDesign(d *design.Design) SiteSpec {
	s := SiteSpec{}
	if d.Site != nil {
		s.Domain = d.Site.Spec.Domain
		s.SSHKeys = slices.Clone(d.Site.Spec.SSHKeys)
	}
	for _, name := range sortedKeys(d.Networks) {
		s.Subnets = append(s.Subnets, subnet(name, d.Networks[name]))
	}
	for _, name := range sortedKeys(d.NetworkLinks) {
		l := d.NetworkLinks[name]
		sl := SiteLink{Name: name, MTU: l.Spec.MTU, Networks: slices.Clone(l.Spec.AllowedNetworks),
			NativeNetwork: l.Spec.Trunking.NativeNetwork}
		if l.Spec.Trunking.Mode != "802.1q" && len(sl.Networks) > 0 {
			sl.NativeNetwork = sl.Networks[0] // no tagging: the link carries its network untagged
		}
		s.Links = append(s.Links, sl)
	}
	s.PXENetwork = pxeNetwork(d)
	return s
}

// pxeNetwork applies SiteFromDesign's rule.
func pxeNetwork(d *design.Design) string {
	for _, nn := range sortedKeys(d.Nodes) {
		n := d.Nodes[nn]
		if n == nil || n.Spec.Hardware == nil || n.Spec.Hardware.PXE.Interface == "" {
			continue
		}
		dev := n.Spec.Hardware.PXE.Interface
		for _, in := range sortedKeys(n.Spec.Interfaces) {
			i := n.Spec.Interfaces[in]
			if !slices.Contains(i.Devices, dev) {
				continue
			}
			if l := d.NetworkLinks[i.Link]; l != nil && l.Spec.Trunking.Mode == "802.1q" {
				if nat := l.Spec.Trunking.NativeNetwork; nat != "" && d.Networks[nat] != nil {
					return nat
				}
				continue
			}
			if len(i.Networks) > 0 && d.Networks[i.Networks[0]] != nil {
				return i.Networks[0]
			}
		}
	}
	if d.Networks["pxe"] != nil {
		return "pxe"
	}
	for _, name := range sortedKeys(d.NetworkLinks) {
		if !strings.Contains(name, "pxe") {
			continue
		}
		l := d.NetworkLinks[name]
		if nat := l.Spec.Trunking.NativeNetwork; nat != "" {
			return nat
		}
		if len(l.Spec.AllowedNetworks) == 1 {
			return l.Spec.AllowedNetworks[0]
		}
	}
	return ""
}

func subnet(name string, n *design.Network) Subnet {
	out := Subnet{Name: name, CIDR: n.Spec.CIDR, VLAN: n.Spec.VLAN, MTU: n.Spec.MTU,
		Gateway: n.Spec.Gateway, DNSServers: n.Spec.DNS.Servers}
	for _, r := range n.Spec.Ranges {
		out.Ranges = append(out.Ranges, AddressPool{Type: r.Type, Start: r.Start, End: r.End})
	}
	for _, r := range n.Spec.Routes {
		out.Routes = append(out.Routes, Route{To: r.To, Via: r.Via, Metric: r.Metric})
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
	if c := s.Constraints; c != nil {
		out.Constraints = &Constraints{Zone: c.Zone, Pool: c.Pool, Tags: slices.Clone(c.Tags), MinCPU: c.MinCPU}
		if sz, err := design.ParseSize(c.MinMemory); c.MinMemory != "" && err == nil && sz.Bytes > 0 {
			out.Constraints.MinMemoryMiB = (sz.Bytes + 1<<20 - 1) >> 20 // rounded up: at least what the design asks
		}
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

// PowerFromDesign returns the power settings a provisioner needs for a
// node's BMC; the password is the resolved secret.
func PowerFromDesign(d *design.Design, n *design.Node, password Secret) *PowerSettings {
	b := BMCFromDesign(d, n, password)
	driver := "ipmi"
	if d.Site != nil {
		driver = d.Site.Spec.Drivers.OOB
	}
	ep := n.OOB(driver)
	efi := n.Spec.Hardware == nil || n.Spec.Hardware.BootMode != "bios"
	return &PowerSettings{Type: ep.Type, Address: b.Address, Port: b.Port, Protocol: b.Protocol, CipherSuite: b.CipherSuite,
		Privilege: b.Privilege, Username: b.Username, Password: password, EFI: efi}
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
