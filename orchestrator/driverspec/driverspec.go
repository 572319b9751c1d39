// Package driverspec maps the design model onto the types of the driver
// SDK (package drivers): the site a server driver prepares, each node's
// interfaces, storage and platform, and how its BMC is reached. It lives
// on the engine's side so that drivers, and the authors of external
// drivers, depend on the SDK alone and never on the design model.
package driverspec

import (
	"maps"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// Site answers the site-wide data a server driver prepares: the
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
func Site(d *design.Design) drivers.SiteSpec {
	s := drivers.SiteSpec{}
	if d.Site != nil {
		s.Domain = d.Site.Spec.Domain
		s.SSHKeys = slices.Clone(d.Site.Spec.SSHKeys)
	}
	for _, name := range sortedKeys(d.Networks) {
		s.Subnets = append(s.Subnets, subnet(name, d.Networks[name]))
	}
	for _, name := range sortedKeys(d.NetworkLinks) {
		l := d.NetworkLinks[name]
		sl := drivers.SiteLink{Name: name, MTU: l.Spec.MTU, Networks: slices.Clone(l.Spec.AllowedNetworks),
			NativeNetwork: l.Spec.Trunking.NativeNetwork}
		if l.Spec.Trunking.Mode != "802.1q" && len(sl.Networks) > 0 {
			sl.NativeNetwork = sl.Networks[0] // no tagging: the link carries its network untagged
		}
		s.Links = append(s.Links, sl)
	}
	s.PXENetwork = pxeNetwork(d)
	return s
}

// pxeNetwork applies Site's rule.
func pxeNetwork(d *design.Design) string {
	if net := pxeOfNodes(d); net != "" {
		return net
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

// pxeOfNodes is the first point of Site's rule: the network the first
// node with a PXE device carries untagged on it ("" when none).
func pxeOfNodes(d *design.Design) string {
	for _, nn := range sortedKeys(d.Nodes) {
		n := d.Nodes[nn]
		if n == nil || n.Spec.Hardware == nil || n.Spec.Hardware.PXE.Interface == "" {
			continue
		}
		dev := n.Spec.Hardware.PXE.Interface
		for _, in := range sortedKeys(n.Spec.Interfaces) {
			if i := n.Spec.Interfaces[in]; slices.Contains(i.Devices, dev) {
				if net, ok := untagged(d, i); ok {
					return net
				}
			}
		}
	}
	return ""
}

// untagged is the network an interface carries untagged, when the design
// has it: its link's native network on an 802.1q trunk, else its first.
// ok is false when the interface settles nothing (look further).
func untagged(d *design.Design, i design.Interface) (string, bool) {
	if l := d.NetworkLinks[i.Link]; l != nil && l.Spec.Trunking.Mode == "802.1q" {
		nat := l.Spec.Trunking.NativeNetwork
		return nat, nat != "" && d.Networks[nat] != nil
	}
	if len(i.Networks) > 0 && d.Networks[i.Networks[0]] != nil {
		return i.Networks[0], true
	}
	return "", false
}

func subnet(name string, n *design.Network) drivers.Subnet {
	out := drivers.Subnet{Name: name, CIDR: n.Spec.CIDR, VLAN: n.Spec.VLAN, MTU: n.Spec.MTU,
		Gateway: n.Spec.Gateway, DNSServers: n.Spec.DNS.Servers}
	for _, r := range n.Spec.Ranges {
		out.Ranges = append(out.Ranges, drivers.AddressPool{Type: r.Type, Start: r.Start, End: r.End})
	}
	for _, r := range n.Spec.Routes {
		out.Routes = append(out.Routes, drivers.Route{To: r.To, Via: r.Via, Metric: r.Metric})
	}
	return out
}

// platformImage is the image the provisioner deploys n with: an Image
// document's provisioner name (custom/gpu-golden, ubuntu/noble), else the
// platform.image as written (a bare series: the provisioner's default OS).
func platformImage(d *design.Design, n *design.Node) string {
	if im := d.ImageOf(n); im != nil && d.Images[im.Metadata.Name] != nil {
		return d.Images[im.Metadata.Name].ProvisionerName()
	}
	return n.Spec.Platform.Image
}

// Node answers what server and network drivers need of a node.
// machineID is the provisioner's ID when already known.
func Node(d *design.Design, n *design.Node, machineID string) drivers.Node {
	s := &n.Spec
	out := drivers.Node{
		NodeRef:     drivers.NodeRef{Name: n.Metadata.Name, MachineID: machineID},
		Hostname:    n.Metadata.Name,
		BootMAC:     s.BootMAC,
		BMCAddress:  s.OOB.Address,
		Rack:        s.Rack,
		Primary:     s.PrimaryNetwork,
		Platform:    drivers.Platform{Image: platformImage(d, n), Kernel: s.Platform.Kernel, KernelParams: s.Platform.KernelParams},
		Tags:        s.Tags,
		OwnerData:   s.OwnerData,
		Constraints: constraints(s.Constraints),
		Storage:     storage(s),
	}
	site := d.SiteOf(n)
	out.Interfaces = interfaces(d, s, site.HasFabric())
	if site != nil {
		out.Domain = site.Spec.Domain
	}
	out.Fabric = nodeFabric(d, n, site)
	return out
}

// constraints are the allocation constraints of a node the design does
// not pin (nil: none).
func constraints(c *design.Constraints) *drivers.Constraints {
	if c == nil {
		return nil
	}
	out := &drivers.Constraints{Zone: c.Zone, Pool: c.Pool, Tags: slices.Clone(c.Tags), MinCPU: c.MinCPU}
	if sz, err := design.ParseSize(c.MinMemory); c.MinMemory != "" && err == nil && sz.Bytes > 0 {
		out.MinMemoryMiB = (sz.Bytes + 1<<20 - 1) >> 20 // rounded up: at least what the design asks
	}
	return out
}

// interfaces are a node's interfaces by name, each with its link's
// bonding and trunking, its devices and its networks with the node's
// address on each. With a fabric (the node's Site declares switches),
// each device carries the switch port its cabling names and each
// untagged network its switchVlan.
func interfaces(d *design.Design, s *design.NodeSpec, fabric bool) []drivers.Interface {
	addr := map[string]string{}
	for _, a := range s.Addressing {
		addr[a.Network] = a.Address
	}
	var out []drivers.Interface
	for _, name := range sortedKeys(s.Interfaces) {
		in := s.Interfaces[name]
		oi := drivers.Interface{Name: name, Link: drivers.Link{Name: in.Link}}
		if l := d.NetworkLinks[in.Link]; l != nil {
			b, t := l.Spec.Bonding, l.Spec.Trunking
			oi.Link = drivers.Link{Name: in.Link, MTU: l.Spec.MTU, BondMode: b.Mode, BondHash: b.Hash, LACPRate: b.LACPRate,
				MIIMon: b.MIIMon, UpDelay: b.UpDelay, DownDelay: b.DownDelay, Trunking: t.Mode, NativeNetwork: t.NativeNetwork}
		}
		for _, dev := range in.Devices {
			od := device(s.Hardware, dev)
			if c, ok := s.Cabling[dev]; ok && fabric {
				od.Switch, od.Port = c.Switch, c.Port
			}
			oi.Devices = append(oi.Devices, od)
		}
		for _, nn := range in.Networks {
			if net := d.Networks[nn]; net != nil {
				sn := subnet(nn, net)
				if fabric && net.Spec.VLAN == 0 {
					sn.UntaggedVLAN = net.Spec.SwitchVLAN
				}
				oi.Networks = append(oi.Networks, drivers.InterfaceNetwork{Subnet: sn, Address: addr[nn]})
			}
		}
		out = append(out, oi)
	}
	return out
}

// storage is a node's disk layout, devices, partitions, volume groups
// and logical volumes each by name.
func storage(s *design.NodeSpec) drivers.Storage {
	var out drivers.Storage
	for _, name := range sortedKeys(s.Storage.Devices) {
		sd := s.Storage.Devices[name]
		od := drivers.StorageDevice{Device: device(s.Hardware, name), VolumeGroup: sd.VolumeGroup}
		for _, pn := range sortedKeys(sd.Partitions) {
			p := sd.Partitions[pn]
			od.Partitions = append(od.Partitions, drivers.Partition{Name: pn, Size: p.Size, Bootable: p.Bootable,
				Filesystem: filesystem(p.Filesystem), VolumeGroup: p.VolumeGroup})
		}
		out.Devices = append(out.Devices, od)
	}
	for _, vn := range sortedKeys(s.Storage.VolumeGroups) {
		vg := drivers.VolumeGroup{Name: vn}
		lvs := s.Storage.VolumeGroups[vn].LogicalVolumes
		for _, ln := range sortedKeys(lvs) {
			vg.LogicalVolumes = append(vg.LogicalVolumes, drivers.LogicalVolume{Name: ln, Size: lvs[ln].Size, Filesystem: filesystem(lvs[ln].Filesystem)})
		}
		out.VolumeGroups = append(out.VolumeGroups, vg)
	}
	return out
}

// BMC answers how to reach a node's BMC; the password is the
// resolved secret its reference names.
func BMC(d *design.Design, n *design.Node, password drivers.Secret) drivers.BMC {
	return BMCAt(n, oob(d, n), password)
}

// BMCAt answers what an OOB driver needs to reach node n's BMC through
// the endpoint ep (its first method, or its fallback).
func BMCAt(n *design.Node, ep design.OOBEndpoint, password drivers.Secret) drivers.BMC {
	return drivers.BMC{Node: n.Metadata.Name, Address: ep.Address, Port: ep.Port, Protocol: ep.Protocol,
		CipherSuite: ep.CipherSuite, Privilege: ep.Privilege, Username: ep.Username, Password: password,
		CAFile: ep.CAFile, Fingerprint: ep.Fingerprint, Insecure: ep.Insecure, SystemID: ep.SystemID}
}

// Power answers the power settings a provisioner needs for a
// node's BMC; the password is the resolved secret.
func Power(d *design.Design, n *design.Node, password drivers.Secret) *drivers.PowerSettings {
	b := BMC(d, n, password)
	ep := oob(d, n)
	efi := n.Spec.Hardware == nil || n.Spec.Hardware.BootMode != "bios"
	return &drivers.PowerSettings{Type: ep.Type, Address: b.Address, Port: b.Port, Protocol: b.Protocol, CipherSuite: b.CipherSuite,
		Privilege: b.Privilege, Username: b.Username, Password: password, EFI: efi, SystemID: b.SystemID}
}

// oob is the node's BMC endpoint for the site's out-of-band driver
// (ipmi without a site).
func oob(d *design.Design, n *design.Node) design.OOBEndpoint {
	driver := "ipmi"
	if d.Site != nil {
		driver = d.Site.Spec.Drivers.OOB
	}
	return n.OOB(driver)
}

func device(hw *design.HardwareProfileSpec, name string) drivers.Device {
	if hw != nil {
		if a, ok := hw.DeviceAliases[name]; ok {
			return drivers.Device{Alias: name, Bus: a.Bus, Address: a.Address}
		}
	}
	return drivers.Device{Alias: name}
}

func filesystem(f *design.Filesystem) *drivers.Filesystem {
	if f == nil {
		return nil
	}
	return &drivers.Filesystem{FSType: f.FSType, Mountpoint: f.Mountpoint, Options: f.Options, Label: f.Label}
}

func sortedKeys[T any](m map[string]T) []string {
	return slices.Sorted(maps.Keys(m))
}
