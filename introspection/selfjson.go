package introspection

import (
	"maps"
	"net/netip"
	"slices"
	"strconv"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/jsonenc"
)

// selfParts are the parts of the /v1/self answers that a design revision
// shares between its nodes, encoded once per design: each link, each
// network (but the node's address and the tagging of its link), the DNS,
// NTP and SSH keys per primary network, the boot actions sorted by name.
type selfParts struct {
	domain  string
	links   map[string]*linkPart
	nets    map[string]*netPart
	dns     map[string][]byte // by primary network; "" for one not in the design
	actions []actionPart
	// fabric reports whether a node's Site declares switches: its NICs
	// then carry the switch port their cabling names (driverspec).
	fabric func(*design.Node) bool
	// images are the design's Image documents: a platform.image naming
	// one is written as its provisioner name (custom/gpu-golden), as
	// driverspec tells the server driver.
	images map[string]*design.Image
}

type linkPart struct {
	json             []byte // the "link" object
	trunking, native string
}

type netPart struct {
	head []byte // {"name":…,"cidr":…,"prefix":…[,"vlan":…]
	vlan int
	mtu  []byte // ,"mtu":…
	tail []byte // [,"gateway":…][,"dns":…][,"routes":…]}
}

type actionPart struct {
	ba   *design.BootAction
	json []byte // {"name":…,"signaling":…}
}

// newSelfParts encodes a design's shared parts.
func newSelfParts(d *design.Design) *selfParts {
	p := &selfParts{links: map[string]*linkPart{}, nets: map[string]*netPart{}, dns: map[string][]byte{},
		fabric: func(n *design.Node) bool { return d.SiteOf(n).HasFabric() }, images: d.Images}
	var site *design.SiteSpec
	if d.Site != nil {
		site = &d.Site.Spec
		p.domain = site.Domain
	}
	for name, l := range d.NetworkLinks {
		p.links[name] = newLinkPart(name, &l.Spec)
	}
	for name, nw := range d.Networks {
		p.nets[name] = newNetPart(name, &nw.Spec)
		p.dns[name] = appendSiteParts(nil, site, nw)
	}
	p.dns[""] = appendSiteParts(nil, site, nil)
	for _, name := range slices.Sorted(maps.Keys(d.BootActions)) {
		ba := d.BootActions[name]
		j := append([]byte(`{"name":`), appendString(nil, name)...)
		j = append(j, `,"signaling":`...)
		j = strconv.AppendBool(j, ba.Spec.Signaling)
		p.actions = append(p.actions, actionPart{ba: ba, json: append(j, '}')})
	}
	return p
}

// newLinkPart encodes a network link: its MTU, bonding and trunking.
func newLinkPart(name string, ls *design.NetworkLinkSpec) *linkPart {
	b := &ls.Bonding
	lp := &linkPart{trunking: ls.Trunking.Mode, native: ls.Trunking.NativeNetwork}
	j := append([]byte(`{"name":`), appendString(nil, name)...)
	j = append(j, `,"mtu":`...)
	j = strconv.AppendInt(j, int64(ls.MTU), 10)
	j = append(j, `,"bondMode":`...)
	j = appendString(j, b.Mode)
	j = appendOptString(j, `,"bondHash":`, b.Hash)
	j = appendOptString(j, `,"lacpRate":`, b.LACPRate)
	j = appendOptInt(j, `,"miimon":`, b.MIIMon)
	j = appendOptInt(j, `,"updelay":`, b.UpDelay)
	j = appendOptInt(j, `,"downdelay":`, b.DownDelay)
	j = append(j, `,"trunking":`...)
	j = appendString(j, lp.trunking)
	j = appendOptString(j, `,"nativeNetwork":`, lp.native)
	lp.json = append(j, '}')
	return lp
}

// newNetPart encodes a network around what is the node's: the head up to
// the VLAN, the MTU, and the tail from the gateway on.
func newNetPart(name string, ns *design.NetworkSpec) *netPart {
	np := &netPart{vlan: ns.VLAN}
	h := append([]byte(`{"name":`), appendString(nil, name)...)
	h = append(h, `,"cidr":`...)
	h = appendString(h, ns.CIDR)
	h = append(h, `,"prefix":`...)
	prefix := 0
	if pf, err := netip.ParsePrefix(ns.CIDR); err == nil {
		prefix = pf.Bits()
	}
	h = strconv.AppendInt(h, int64(prefix), 10)
	np.head = appendOptInt(h, `,"vlan":`, ns.VLAN)
	np.mtu = strconv.AppendInt([]byte(`,"mtu":`), int64(ns.MTU), 10)
	t := appendOptString(nil, `,"gateway":`, ns.Gateway)
	t = appendNetDNS(t, ns.DNS)
	t = appendRoutes(t, ns.Routes)
	np.tail = append(t, '}')
	return np
}

// appendNetDNS writes a network's `,"dns":{...}` unless it is the zero
// value (omitzero).
func appendNetDNS(dst []byte, dns design.NetworkDNS) []byte {
	if dns.Domain == "" && dns.Servers == nil {
		return dst
	}
	dst = append(dst, `,"dns":{`...)
	if dns.Domain != "" {
		dst = append(dst, `"domain":`...)
		dst = appendString(dst, dns.Domain)
	}
	if len(dns.Servers) > 0 {
		if dns.Domain != "" {
			dst = append(dst, ',')
		}
		dst = append(dst, `"servers":`...)
		dst = appendStrings(dst, dns.Servers)
	}
	return append(dst, '}')
}

// appendRoutes writes a network's `,"routes":[...]` when it has some.
func appendRoutes(dst []byte, routes []design.Route) []byte {
	if len(routes) == 0 {
		return dst
	}
	dst = append(dst, `,"routes":[`...)
	for i, r := range routes {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"to":`...)
		dst = appendString(dst, r.To)
		dst = append(dst, `,"via":`...)
		dst = appendString(dst, r.Via)
		dst = appendOptInt(dst, `,"metric":`, r.Metric)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendSiteParts writes "dns" (the site's servers, the primary
// network's instead when it names some; its domain searched first), then
// "ntpServers" and "sshKeys".
func appendSiteParts(dst []byte, site *design.SiteSpec, primary *design.Network) []byte {
	var servers, search, ntp, keys []string
	if site != nil {
		servers, search = site.DNS.Servers, site.DNS.Search
		ntp, keys = site.NTP.Servers, site.SSHKeys
	}
	var primaryDomain string
	if primary != nil {
		if len(primary.Spec.DNS.Servers) > 0 {
			servers = primary.Spec.DNS.Servers
		}
		if dom := primary.Spec.DNS.Domain; dom != "" && !slices.Contains(search, dom) {
			primaryDomain = dom
		}
	}
	dst = append(dst, `,"dns":{`...)
	comma := false
	if len(servers) > 0 {
		dst = append(dst, `"servers":`...)
		dst = appendStrings(dst, servers)
		comma = true
	}
	if primaryDomain != "" || len(search) > 0 {
		if comma {
			dst = append(dst, ',')
		}
		dst = appendSearch(dst, primaryDomain, search)
	}
	dst = append(dst, '}')
	if len(ntp) > 0 {
		dst = append(dst, `,"ntpServers":`...)
		dst = appendStrings(dst, ntp)
	}
	if len(keys) > 0 {
		dst = append(dst, `,"sshKeys":`...)
		dst = appendStrings(dst, keys)
	}
	return dst
}

// appendSearch writes the DNS search list: the primary network's domain
// ("" for none) first, then the site's.
func appendSearch(dst []byte, primaryDomain string, search []string) []byte {
	dst = append(dst, `"search":[`...)
	if primaryDomain != "" {
		dst = appendString(dst, primaryDomain)
	}
	for i, v := range search {
		if i > 0 || primaryDomain != "" {
			dst = append(dst, ',')
		}
		dst = appendString(dst, v)
	}
	return append(dst, ']')
}

// appendSelf appends the JSON of the node's /v1/self view to dst: the
// bytes json.Marshal(selfOf(d, n, deployment)) gives, written straight
// from the design (p holds its shared parts, encoded once). selfOf builds
// the view through driverspec.Node (maps, sorted key lists and
// structs, then reflection to encode them), which cost about 20 µs of the
// 25 µs a first request of a token took. TestAppendSelf holds the two to
// the same bytes over the example design and a generated site, and
// TestSelfFields fails when a type of the view gains a field this does
// not write.
func appendSelf(dst []byte, p *selfParts, n *design.Node, deployment string) []byte {
	s := &n.Spec
	dst = appendIdentity(dst, p.domain, n, deployment)
	if site, ok := p.dns[s.PrimaryNetwork]; ok {
		dst = append(dst, site...)
	} else {
		dst = append(dst, p.dns[""]...)
	}
	dst = append(dst, `,"interfaces":[`...)
	var kb [16]string
	for i, name := range sortedKeys(kb[:0], s.Interfaces) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendInterface(dst, p, s, name, p.fabric(n))
	}
	dst = append(dst, `],"storage":`...)
	dst = appendStorage(dst, s)
	dst = append(dst, `,"platform":{"image":`...)
	if im := p.images[s.Platform.Image]; im != nil {
		dst = appendString(dst, im.ProvisionerName())
	} else {
		dst = appendString(dst, s.Platform.Image)
	}
	dst = appendOptString(dst, `,"kernel":`, s.Platform.Kernel)
	if len(s.Platform.KernelParams) > 0 {
		dst = append(dst, `,"kernelParams":`...)
		dst = appendStringMap(dst, s.Platform.KernelParams)
	}
	dst = append(dst, `},"bootActions":[`...)
	first := true
	for _, a := range p.actions { // design.BootActionsFor, over the sorted list
		if !a.ba.Spec.NodeFilter.Matches(n) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, a.json...)
	}
	return append(dst, "]}"...)
}

// appendIdentity opens the view with who the node is: its names, the
// deployment, rack, labels, tags and primary network.
func appendIdentity(dst []byte, domain string, n *design.Node, deployment string) []byte {
	s := &n.Spec
	dst = append(dst, `{"name":`...)
	dst = appendString(dst, n.Metadata.Name)
	dst = append(dst, `,"hostname":`...)
	dst = appendString(dst, n.Metadata.Name)
	if domain != "" {
		dst = append(dst, `,"domain":`...)
		dst = appendString(dst, domain)
		dst = append(dst, `,"fqdn":`...)
		dst = appendString(dst, n.Metadata.Name+"."+domain)
	} else {
		dst = append(dst, `,"fqdn":`...)
		dst = appendString(dst, n.Metadata.Name)
	}
	dst = append(dst, `,"deployment":`...)
	dst = appendString(dst, deployment)
	dst = appendOptString(dst, `,"rack":`, s.Rack)
	if len(n.Metadata.Labels) > 0 {
		dst = append(dst, `,"labels":`...)
		dst = appendStringMap(dst, n.Metadata.Labels)
	}
	if len(s.Tags) > 0 {
		dst = append(dst, `,"tags":`...)
		dst = appendStrings(dst, s.Tags)
	}
	return appendOptString(dst, `,"primaryNetwork":`, s.PrimaryNetwork)
}

// appendStorage writes the node's storage object: its devices with their
// partitions, then its volume groups with their logical volumes.
func appendStorage(dst []byte, s *design.NodeSpec) []byte {
	dst = append(dst, '{')
	var kb [16]string
	if len(s.Storage.Devices) > 0 {
		dst = append(dst, `"devices":[`...)
		for i, name := range sortedKeys(kb[:0], s.Storage.Devices) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendStorageDevice(dst, s.Hardware, name, s.Storage.Devices[name])
		}
		dst = append(dst, ']')
		if len(s.Storage.VolumeGroups) > 0 {
			dst = append(dst, ',')
		}
	}
	if len(s.Storage.VolumeGroups) > 0 {
		dst = append(dst, `"volumeGroups":[`...)
		for i, vn := range sortedKeys(kb[:0], s.Storage.VolumeGroups) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendVolumeGroup(dst, vn, s.Storage.VolumeGroups[vn])
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendStorageDevice writes one storage device: the device resolved
// through the hardware profile, its partitions sorted by name, its volume
// group.
func appendStorageDevice(dst []byte, hw *design.HardwareProfileSpec, name string, sd design.StorageDevice) []byte {
	dst = append(dst, `{"device":`...)
	dst = appendDevice(dst, hw, name)
	if len(sd.Partitions) > 0 {
		dst = append(dst, `,"partitions":[`...)
		var pb [16]string
		for j, pn := range sortedKeys(pb[:0], sd.Partitions) {
			if j > 0 {
				dst = append(dst, ',')
			}
			p := sd.Partitions[pn]
			dst = append(dst, `{"name":`...)
			dst = appendString(dst, pn)
			dst = append(dst, `,"size":`...)
			dst = appendString(dst, p.Size)
			if p.Bootable {
				dst = append(dst, `,"bootable":true`...)
			}
			dst = appendFilesystem(dst, p.Filesystem)
			dst = appendOptString(dst, `,"volumeGroup":`, p.VolumeGroup)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = appendOptString(dst, `,"volumeGroup":`, sd.VolumeGroup)
	return append(dst, '}')
}

// appendVolumeGroup writes one volume group and its logical volumes
// sorted by name.
func appendVolumeGroup(dst []byte, name string, vg design.VolumeGroup) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendString(dst, name)
	if lvs := vg.LogicalVolumes; len(lvs) > 0 {
		dst = append(dst, `,"logicalVolumes":[`...)
		var lb [16]string
		for j, ln := range sortedKeys(lb[:0], lvs) {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"name":`...)
			dst = appendString(dst, ln)
			dst = append(dst, `,"size":`...)
			dst = appendString(dst, lvs[ln].Size)
			dst = appendFilesystem(dst, lvs[ln].Filesystem)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendInterface writes one of the node's interfaces: its link, its
// devices resolved through the hardware profile's aliases, its networks
// with the node's address on each.
func appendInterface(dst []byte, p *selfParts, s *design.NodeSpec, name string, fabric bool) []byte {
	in := s.Interfaces[name]
	dst = append(dst, `{"name":`...)
	dst = appendString(dst, name)
	dst = append(dst, `,"link":`...)
	var trunking, native string
	if l := p.links[in.Link]; l != nil {
		trunking, native = l.trunking, l.native
		dst = append(dst, l.json...)
	} else {
		dst = append(dst, `{"name":`...)
		dst = appendString(dst, in.Link)
		dst = append(dst, `,"mtu":0,"bondMode":"","trunking":""}`...)
	}
	dst = append(dst, `,"devices":`...)
	if len(in.Devices) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, dev := range in.Devices {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendDevice(dst, s.Hardware, dev)
			if c, ok := s.Cabling[dev]; ok && fabric {
				dst = appendCable(dst[:len(dst)-1], c)
			}
		}
		dst = append(dst, ']')
	}
	first := true
	for _, nn := range in.Networks {
		np := p.nets[nn]
		if np == nil {
			continue
		}
		if first {
			dst = append(dst, `,"networks":[`...)
			first = false
		} else {
			dst = append(dst, ',')
		}
		dst = append(dst, np.head...)
		if trunking == "802.1q" && nn != native && np.vlan > 0 {
			dst = append(dst, `,"tagged":true`...)
		} else {
			dst = append(dst, `,"tagged":false`...)
		}
		dst = append(dst, np.mtu...)
		if a := addressOn(s, nn); a != "" {
			dst = append(dst, `,"address":`...)
			dst = appendString(dst, a)
		}
		dst = append(dst, np.tail...)
	}
	if !first {
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// addressOn is the node's address on a network: the last addressing
// entry naming it, as driverspec.Node takes it.
func addressOn(s *design.NodeSpec, network string) string {
	for i := len(s.Addressing) - 1; i >= 0; i-- {
		if s.Addressing[i].Network == network {
			return s.Addressing[i].Address
		}
	}
	return ""
}

// appendDevice writes a device name resolved through the hardware
// profile's aliases.
func appendDevice(dst []byte, hw *design.HardwareProfileSpec, name string) []byte {
	dst = append(dst, `{"alias":`...)
	dst = appendString(dst, name)
	if hw != nil {
		if a, ok := hw.DeviceAliases[name]; ok {
			if a.Bus != "" {
				dst = append(dst, `,"bus":`...)
				dst = appendString(dst, a.Bus)
			}
			if a.Address != "" {
				dst = append(dst, `,"address":`...)
				dst = appendString(dst, a.Address)
			}
		}
	}
	return append(dst, '}')
}

// appendCable writes a cabled NIC's switch port (the device object's
// closing brace included), as driverspec gives it with a fabric.
func appendCable(dst []byte, c design.Cable) []byte {
	if c.Switch != "" {
		dst = append(dst, `,"switch":`...)
		dst = appendString(dst, c.Switch)
	}
	if c.Port != "" {
		dst = append(dst, `,"port":`...)
		dst = appendString(dst, c.Port)
	}
	return append(dst, '}')
}

// appendFilesystem writes `,"filesystem":{...}` when f is set.
func appendFilesystem(dst []byte, f *design.Filesystem) []byte {
	if f == nil {
		return dst
	}
	dst = append(dst, `,"filesystem":{"fstype":`...)
	dst = appendString(dst, f.FSType)
	if f.Mountpoint != "" {
		dst = append(dst, `,"mountpoint":`...)
		dst = appendString(dst, f.Mountpoint)
	}
	if f.Options != "" {
		dst = append(dst, `,"options":`...)
		dst = appendString(dst, f.Options)
	}
	if f.Label != "" {
		dst = append(dst, `,"label":`...)
		dst = appendString(dst, f.Label)
	}
	return append(dst, '}')
}

// sortedKeys appends m's keys to buf and sorts them (buf on the caller's
// stack: no allocation for small maps).
func sortedKeys[T any](buf []string, m map[string]T) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}

func appendStrings(dst []byte, vs []string) []byte {
	dst = append(dst, '[')
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, v)
	}
	return append(dst, ']')
}

// appendStringMap writes a map as encoding/json does: keys sorted.
func appendStringMap(dst []byte, m map[string]string) []byte {
	dst = append(dst, '{')
	var kb [16]string
	for i, k := range sortedKeys(kb[:0], m) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ':')
		dst = appendString(dst, m[k])
	}
	return append(dst, '}')
}

// appendString writes s as a JSON string exactly as encoding/json does
// (jsonenc.AppendString, which jsonenc's tests check against
// json.Marshal).
func appendString(dst []byte, s string) []byte { return jsonenc.AppendString(dst, s) }

// appendOptString writes key (`,"name":`) and s unless s is empty
// (omitempty).
func appendOptString(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return appendString(append(dst, key...), s)
}

// appendOptInt writes key (`,"name":`) and v unless v is 0 (omitempty).
func appendOptInt(dst []byte, key string, v int) []byte {
	if v == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, key...), int64(v), 10)
}
