package maas

import (
	"fmt"
	"slices"
)

// JSON shapes, field for field as MAAS serialises them.

func uri(format string, args ...any) string { return APIPrefix + fmt.Sprintf(format, args...) }

func (s *Server) renderZone(z *zone) map[string]any {
	return map[string]any{"id": z.ID, "name": z.Name, "description": z.Description, "resource_uri": uri("/zones/%s/", z.Name)}
}

func (s *Server) renderPool(p *pool) map[string]any {
	return map[string]any{"id": p.ID, "name": p.Name, "description": p.Description, "resource_uri": uri("/resourcepool/%d/", p.ID)}
}

func (s *Server) renderDomain(d *domain) map[string]any {
	n := s.domainCount(d.Name)
	return map[string]any{"id": d.ID, "name": d.Name, "authoritative": d.Authoritative, "ttl": d.TTL,
		"is_default": d.Name == s.opts.Domain, "resource_record_count": n, "resource_uri": uri("/domains/%d/", d.ID)}
}

func (s *Server) renderVLAN(v *vlan) map[string]any {
	f := s.fabrics[v.FabricID]
	fname := ""
	if f != nil {
		fname = f.Name
	}
	var sp any
	if v.Space != "" {
		sp = v.Space
	} else {
		sp = "undefined"
	}
	var primary any
	if v.Primary != "" {
		primary = v.Primary
	}
	return map[string]any{"id": v.ID, "vid": v.VID, "name": v.Name, "mtu": v.MTU, "dhcp_on": v.DHCPOn,
		"external_dhcp": nil, "relay_vlan": nil, "fabric": fname, "fabric_id": v.FabricID, "space": sp,
		"primary_rack": primary, "secondary_rack": nil, "resource_uri": uri("/vlans/%d/", v.ID)}
}

func (s *Server) renderSubnet(sn *subnet) map[string]any {
	var vl any
	if v := s.vlans[sn.VLANID]; v != nil {
		vl = s.renderVLAN(v)
	}
	var gw any
	if sn.GatewayIP != "" {
		gw = sn.GatewayIP
	}
	dns := sn.DNSServers
	if dns == nil {
		dns = []string{}
	}
	sp := sn.Space
	if sp == "" {
		sp = "undefined"
	}
	return map[string]any{"id": sn.ID, "name": sn.Name, "cidr": sn.CIDR, "vlan": vl, "gateway_ip": gw,
		"dns_servers": dns, "rdns_mode": sn.RDNSMode, "allow_dns": sn.AllowDNS, "allow_proxy": sn.AllowProxy,
		"active_discovery": false, "managed": sn.Managed, "space": sp, "description": sn.Description,
		"disabled_boot_architectures": []string{}, "resource_uri": uri("/subnets/%d/", sn.ID)}
}

func (s *Server) renderLink(l *link) map[string]any {
	out := map[string]any{"id": l.ID, "mode": l.Mode}
	if l.IP != "" {
		out["ip_address"] = l.IP
	}
	if sn := s.subnets[l.SubnetID]; sn != nil {
		out["subnet"] = s.subnetAnswer(sn) // render_shared.go
	}
	return out
}

func (s *Server) renderInterface(m *machine, i *iface) map[string]any {
	links := make([]any, 0, len(i.Links))
	for _, l := range i.Links {
		links = append(links, s.renderLink(l))
	}
	var vl any
	if v := s.vlans[i.VLANID]; v != nil {
		vl = s.vlanAnswer(v) // render_shared.go
	}
	children := []string{}
	for _, o := range m.Interfaces {
		for _, p := range o.Parents {
			if p == i.Name {
				children = append(children, o.Name)
			}
		}
	}
	parents := i.Parents
	if parents == nil {
		parents = []string{}
	}
	tags := i.Tags
	if tags == nil {
		tags = []string{}
	}
	params := any("")
	if len(i.Params) > 0 {
		params = i.Params
	}
	var mac any
	if i.MAC != "" {
		mac = i.MAC
	}
	connected, speed, maxSpeed, firmware, numa := nicFacts(m, i) // hardware.go
	return map[string]any{"id": i.ID, "name": i.Name, "type": i.Type, "enabled": i.Enabled, "mac_address": mac,
		"vlan": vl, "links": links, "parents": parents, "children": children, "tags": tags, "params": params,
		"effective_mtu": effectiveMTU(m, i, 0), "system_id": m.SystemID, "vendor": nilIfEmpty(i.Vendor), "product": nilIfEmpty(i.Product),
		"firmware_version": firmware, "link_connected": connected, "interface_speed": maxSpeed, "link_speed": speed,
		"numa_node": numa, "sriov_max_vf": 0, "discovered": []any{},
		"resource_uri": uri("/nodes/%s/interfaces/%d/", m.SystemID, i.ID)}
}

// effectiveMTU is MAAS's Interface.get_effective_mtu: the interface's own
// MTU (its mtu parameter, else its VLAN's) or, when larger, the effective
// MTU of any interface built on it (a bond member carries the bond's and
// its VLANs' frames). depth bounds a cycle the API should never let in.
func effectiveMTU(m *machine, i *iface, depth int) int {
	mtu := i.MTU
	if depth > len(m.Interfaces) {
		return mtu
	}
	for _, o := range m.Interfaces {
		if slices.Contains(o.Parents, i.Name) {
			mtu = max(mtu, effectiveMTU(m, o, depth+1))
		}
	}
	return mtu
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func renderFS(f *filesystem) any {
	if f == nil {
		return nil
	}
	var label any = f.Label
	if f.FSType == "lvm-pv" && f.Label == "" {
		label = nil // MAAS creates PV filesystems without a label
	}
	return map[string]any{"fstype": f.FSType, "label": label, "uuid": f.UUID,
		"mount_point": nilIfEmpty(f.MountPoint), "mount_options": nilIfEmpty(f.MountOptions)}
}

func (s *Server) renderPartition(m *machine, b *blockDevice, p *partition) map[string]any {
	usedFor := s.partitionUsedFor(m, p) // storage_usage.go
	typ := "partition"
	tags := p.Tags
	if tags == nil {
		tags = []string{}
	}
	return map[string]any{"id": p.ID, "uuid": p.UUID, "size": p.Size, "bootable": p.Bootable, "type": typ,
		"filesystem": renderFS(p.FS), "path": fmt.Sprintf("/dev/disk/by-dname/%s-part%d", b.Name, p.Index),
		"used_for": usedFor, "tags": tags, "system_id": m.SystemID, "device_id": b.ID,
		"resource_uri": uri("/nodes/%s/blockdevices/%d/partition/%d", m.SystemID, b.ID, p.ID)}
}

func (s *Server) vgName(m *machine, id int) string {
	for _, v := range m.VolumeGroups {
		if v.ID == id {
			return v.Name
		}
	}
	return ""
}

func (s *Server) renderBlockDevice(m *machine, b *blockDevice) map[string]any {
	parts := make([]any, 0, len(b.Partitions))
	for _, p := range b.Partitions {
		parts = append(parts, s.renderPartition(m, b, p))
	}
	usedFor, used, available := s.blockDeviceUsage(m, b) // storage_usage.go
	var numa any = 0
	if b.Type != "physical" {
		numa = nil
	}
	tags := b.Tags
	if tags == nil {
		tags = []string{}
	}
	out := map[string]any{"id": b.ID, "name": b.Name, "type": b.Type, "model": nilIfEmpty(b.Model), "serial": nilIfEmpty(b.Serial),
		"size": b.Size, "block_size": b.BlockSize, "id_path": nilIfEmpty(b.IDPath), "path": "/dev/disk/by-dname/" + b.Name,
		"uuid": nilIfEmpty(b.UUID), "tags": tags, "partitions": parts, "filesystem": renderFS(b.FS), "used_for": usedFor,
		"used_size": used, "available_size": available, "partition_table_type": nilIfEmpty(b.PTType),
		"storage_pool": nil, "system_id": m.SystemID, "numa_node": numa, "firmware_version": nilIfEmpty(b.Firmware),
		"resource_uri": uri("/nodes/%s/blockdevices/%d/", m.SystemID, b.ID)}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// beginListing prepares rendering many machines under one hold of the
// lock: what every machine's JSON repeats is computed once (the domain's
// record count). Call the returned func before unlocking.
func (s *Server) beginListing() (end func()) {
	s.domainCount("") // fills s.domainCounts, kept until a machine comes, goes or moves
	s.listingDomainCounts = s.domainCounts
	return func() { s.listingDomainCounts = nil }
}

// domainMoved keeps the per-domain machine counts as a machine joins
// a domain (from ""), leaves one (to "") or moves: 10,000 enlistments
// each dropping them made every next rendering count 10,000 machines.
func (s *Server) domainMoved(from, to string) {
	if s.domainCounts == nil || from == to {
		return
	}
	if from != "" {
		if s.domainCounts[from]--; s.domainCounts[from] <= 0 {
			delete(s.domainCounts, from)
		}
	}
	if to != "" {
		s.domainCounts[to]++
	}
}

// domainCount is the number of machines in the domain: the listing's
// counts while one renders, else the kept counts (domainCounts, kept
// up to date by domainMoved), so that
// rendering one machine does not count 10,000.
func (s *Server) domainCount(name string) int {
	if s.listingDomainCounts != nil {
		return s.listingDomainCounts[name]
	}
	if s.domainCounts == nil {
		s.domainCounts = map[string]int{}
		for _, m := range s.machines {
			s.domainCounts[m.Domain]++
		}
	} else if verifyListingCache {
		n := 0
		for _, m := range s.machines {
			if m.Domain == name {
				n++
			}
		}
		if n != s.domainCounts[name] {
			listingCacheStale.Add(1)
			s.log.Error().Str("domain", name).Msg("kept domain count is wrong")
		}
	}
	return s.domainCounts[name]
}

// renderMachineInterfaces is a machine's interface_set, its
// boot_interface and its ip_addresses. Each interface is encoded once
// (encodeOnce): the boot interface repeats one.
func (s *Server) renderMachineInterfaces(m *machine) (ifaces []any, boot any, ips []string) {
	ifaces, ips = make([]any, 0, len(m.Interfaces)), []string{}
	scratch := make([]byte, 0, 1536*len(m.Interfaces)) // an interface with a link is about 1.3 KiB
	for _, i := range m.Interfaces {
		var r any
		r, scratch = encodeOnce(scratch, s.renderInterface(m, i))
		ifaces = append(ifaces, r)
		if i.ID == m.BootIfaceID {
			boot = r
		}
		for _, l := range i.Links {
			if l.IP != "" {
				ips = append(ips, l.IP)
			}
		}
	}
	return ifaces, boot, ips
}

// renderMachineDisks is a machine's physical, all and virtual block device
// sets, its storage (the physical disks' MB) and its boot_disk. Each
// device is encoded once (encodeOnce): the sets and the boot disk repeat
// them.
func (s *Server) renderMachineDisks(m *machine) (physical, all, virtual []any, storage float64, boot any) {
	physical, all, virtual = []any{}, []any{}, []any{}
	bootDev := m.bootDisk()                              // storage_usage.go
	scratch := make([]byte, 0, 1024*len(m.BlockDevices)) // a disk without partitions is about 0.8 KiB
	for _, b := range m.BlockDevices {
		var r any
		r, scratch = encodeOnce(scratch, s.renderBlockDevice(m, b))
		if b == bootDev {
			boot = r
		}
		all = append(all, r)
		if b.Type == "physical" {
			physical = append(physical, r)
			storage += float64(b.Size) / 1e6
		} else {
			virtual = append(virtual, r)
		}
	}
	if boot == nil && bootDev != nil { // not one of m.BlockDevices: not expected
		boot = s.renderBlockDevice(m, bootDev)
	}
	return physical, all, virtual, storage, boot
}

// encodeOnce is v's JSON, appended to scratch (returned grown), for a
// part a machine's JSON repeats; v itself when appendJSON cannot encode
// it (encoding/json decides then).
func encodeOnce(scratch []byte, v map[string]any) (any, []byte) {
	start := len(scratch)
	b, err := appendJSON(scratch, v)
	if err != nil {
		return v, scratch[:start]
	}
	return rawJSON(b[start:len(b):len(b)]), b
}

// machinePlace is a machine's zone, pool and domain, the defaults for
// those it names that are gone.
func (s *Server) machinePlace(m *machine) (*zone, *pool, *domain) {
	z := s.zones[m.Zone]
	if z == nil {
		z = s.zones["default"]
	}
	p := s.pools[m.Pool]
	if p == nil {
		p = s.pools["default"]
	}
	return z, p, s.domainOf(m)
}

// domainOf is m's domain, the default one when it names one gone.
func (s *Server) domainOf(m *machine) *domain {
	if d := s.domains[m.Domain]; d != nil {
		return d
	}
	return s.domains[s.opts.Domain]
}

// renderNUMA is the machine's NUMA nodes: one per socket once
// commissioning found the CPUs (cores and memory shared out evenly),
// else one node with every core and all the memory (MAAS always has
// node 0).
func renderNUMA(m *machine) []any {
	n := 1
	if hw := commissionedHW(m); hw != nil {
		n = min(hw.sockets(), max(m.CPUCount, 1))
	}
	out := make([]any, 0, n)
	per := m.CPUCount / n
	for k := 0; k < n; k++ {
		hi := (k + 1) * per
		if k == n-1 {
			hi = m.CPUCount
		}
		cores := make([]int, 0, hi-k*per)
		for c := k * per; c < hi; c++ {
			cores = append(cores, c)
		}
		out = append(out, map[string]any{"index": k, "memory": m.MemoryMiB / n, "cores": cores, "hugepages_set": []any{}})
	}
	return out
}

// powerParamsJSON is the power parameters as MAAS returns them.
func powerParamsJSON(p PowerParams) map[string]any {
	out := map[string]any{}
	for k, v := range p {
		out[k] = v
	}
	return out
}
