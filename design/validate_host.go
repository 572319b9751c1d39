package design

import (
	"fmt"
	"net/netip"
	"strings"
)

// host checks the fields host profiles and nodes share. Problems a node
// inherits from a profile carry the profile's position and are folded into
// the profile's finding by the report.
func (v *validator) host(kind, name string, h *HostSpec, hw *HardwareProfileSpec) {
	if h.HardwareProfile != "" && v.d.HardwareProfiles[h.HardwareProfile] == nil {
		v.r.errorf(RuleReference, kind, name, h.HardwareProfilePos, "hardwareProfile %q does not exist", h.HardwareProfile)
	}
	if h.PrimaryNetwork != "" && v.d.Networks[h.PrimaryNetwork] == nil {
		v.r.errorf(RuleReference, kind, name, h.PrimaryNetworkPos, "primaryNetwork %q does not exist", h.PrimaryNetwork)
	}
	for _, in := range sortedNames(h.Interfaces) {
		v.iface(kind, name, in, h.Interfaces[in], hw)
	}
	for _, key := range sortedNames(h.OwnerData) {
		if looksSecret(key) {
			if _, err := ParseSecretRef(h.OwnerData[key]); err != nil {
				pos := h.OwnerDataKeys[key]
				if !pos.IsSet() {
					pos = h.OwnerDataPos
				}
				v.r.errorf(RuleSecretRef, kind, name, pos, "ownerData.%s looks like a credential but is not a secret reference: %v", key, strings.TrimPrefix(err.Error(), "not a secret reference; "))
			}
		}
	}
	v.storage(kind, name, &h.Storage, hw, kind == KindNode)
}

func fqdn(host, domain string) string {
	if domain == "" {
		return host
	}
	return host + "." + domain
}

func looksSecret(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "password") || strings.Contains(k, "secret") || strings.Contains(k, "token") || strings.HasSuffix(k, "apikey")
}

func (v *validator) iface(kind, name, in string, i Interface, hw *HardwareProfileSpec) {
	l := v.d.NetworkLinks[i.Link]
	if i.Link != "" && l == nil {
		v.r.errorf(RuleReference, kind, name, i.Pos, "interfaces.%s: link %q does not exist", in, i.Link)
	}
	for _, nn := range i.Networks {
		switch {
		case v.d.Networks[nn] == nil:
			v.r.errorf(RuleReference, kind, name, i.Pos, "interfaces.%s: network %q does not exist", in, nn)
		case l != nil && !contains(l.Spec.AllowedNetworks, nn):
			v.r.errorf(RuleNetworkOnLink, kind, name, i.Pos, "interfaces.%s carries network %q, which link %q does not allow; add it to the link's allowedNetworks", in, nn, i.Link)
		}
	}
	for _, dev := range i.Devices {
		v.device(kind, name, i.Pos, "interfaces."+in, dev, hw)
	}
	if l != nil && l.Spec.Bonding.Mode != "disabled" && len(i.Devices) < 2 {
		v.r.errorf(RuleBonding, kind, name, i.Pos, "interfaces.%s is a %s bond (link %q) with %d device(s); a bond needs at least 2", in, l.Spec.Bonding.Mode, i.Link, len(i.Devices))
	}
}

// device checks that a device is an alias of the hardware profile or a
// kernel device name.
func (v *validator) device(kind, name string, pos Pos, where, dev string, hw *HardwareProfileSpec) {
	if hw == nil {
		return // resolved per node, where the hardware profile is known
	}
	if a, ok := hw.DeviceAliases[dev]; ok && a.Bus == "bay" {
		v.r.errorf(RuleReference, kind, name, pos, "%s: %s is a drive behind the RAID controller (bus bay), which the operating system does not see: name the disk it sees (the RAID volume's, e.g. a scsi alias)", where, dev)
		return
	}
	if _, ok := hw.DeviceAliases[dev]; ok || kernelNameRE.MatchString(dev) {
		return
	}
	v.r.errorf(RuleReference, kind, name, pos, "%s: device %q is neither a deviceAlias of the hardware profile (%s) nor a kernel device name", where, dev, strings.Join(sortedNames(hw.DeviceAliases), ", "))
}

// node checks what only a whole node has: addresses, BMC, hostname, MAC.
func (v *validator) node(n *Node) {
	name, s := n.Metadata.Name, &n.Spec
	if p := hostnameProblem(name); p != "" {
		v.r.errorf(RuleHostname, KindNode, name, n.Metadata.Pos, "node name %q is not a valid hostname: %s", name, p)
	} else if fqdn := fqdn(name, v.d.Site.Spec.Domain); len(fqdn) > 253 {
		v.r.errorf(RuleHostname, KindNode, name, n.Metadata.Pos, "FQDN %s is longer than 253 characters (%d)", fqdn, len(fqdn))
	}
	carried := map[string]bool{}
	for _, i := range s.Interfaces {
		for _, nn := range i.Networks {
			carried[nn] = true
		}
	}
	for i, a := range s.Addressing {
		what := fmt.Sprintf("addressing[%d]", i)
		if v.d.Networks[a.Network] == nil {
			if a.Network != "" {
				v.r.errorf(RuleReference, KindNode, name, a.Pos, "%s: network %q does not exist", what, a.Network)
			}
			continue
		}
		if !carried[a.Network] {
			v.r.errorf(RuleNetworkOnLink, KindNode, name, a.Pos, "%s: network %q is addressed but no interface carries it; add it to an interface's networks", what, a.Network)
		}
		if a.Address == "dhcp" || a.Address == "" {
			continue
		}
		ip, ok := v.inNetwork(KindNode, name, a.Network, a.Pos, what+".address", a.Address)
		if !ok {
			continue
		}
		v.useStatic(ip, addrUse{KindNode, name, a.Pos}, "address")
		for _, rg := range v.nets[a.Network].ranges {
			if rg.typ != "static" && !ip.Less(rg.start) && !rg.end.Less(ip) {
				v.r.errorf(RuleIPRange, KindNode, name, a.Pos, "%s %s is inside the %s range %s-%s of network %s (%s); pick an address outside it", what, ip, rg.typ, rg.start, rg.end, a.Network, rg.pos)
			}
		}
	}
	v.nodeOOB(n)
	if s.BootMAC != "" {
		mac := normalMAC(s.BootMAC)
		if mac == "" {
			v.r.errorf(RuleMAC, KindNode, name, s.BootMACPos, "bootMac %q is not a MAC address like 52:54:00:12:34:56", s.BootMAC)
		} else if first, dup := v.macs[mac]; dup {
			v.r.errorf(RuleMAC, KindNode, name, s.BootMACPos, "bootMac %s is already used by %s", mac, first)
		} else {
			v.macs[mac] = addrUse{KindNode, name, s.BootMACPos}
		}
	}
}

func (v *validator) nodeOOB(n *Node) {
	name, o := n.Metadata.Name, &n.Spec.OOB
	ep := n.OOB(v.d.Site.Spec.Drivers.OOB)
	pos := n.Metadata.Pos // what is missing is missing on this node...
	if v.r.owns(KindNode, name, o.Pos) {
		pos = o.Pos // ...at its own oob block, if it has one
	}
	if !n.Unpinned() { // an unpinned node's machine, and its BMC, are the provisioner's choice
		v.bmcNeeds(n, ep.Type, pos)
	}
	if o.Fingerprint != "" && !validFingerprint(o.Fingerprint) {
		v.r.errorf(RuleOOB, KindNode, name, pos, "oob.fingerprint is not a SHA-256 fingerprint: write the certificate's SHA-256 as 64 hex digits (colons between pairs allowed)")
	}
	if c := o.Credentials; c != nil {
		v.secretRef(KindNode, name, c.Pos, "oob.credentials.password", c.Password)
	}
	if o.Port != 0 && (o.Port < 1 || o.Port > 65535) {
		v.r.errorf(RuleOOB, KindNode, name, o.PortPos, "oob.port %d is not a UDP port (1..65535)", o.Port)
	}
	if o.Address == "" {
		return
	}
	a, err := netip.ParseAddr(o.Address)
	if err != nil {
		v.r.errorf(RuleOOB, KindNode, name, o.AddressPos, "oob.address %q is not an IP address", o.Address)
		return
	}
	u := addrUse{KindNode, name, o.AddressPos}
	if first, dup := v.bmcs[a]; dup {
		v.r.errorf(RuleOOB, KindNode, name, o.AddressPos, "BMC address %s is already the BMC of %s; each BMC needs its own address", a, first)
	} else {
		v.bmcs[a] = u
	}
	v.useStatic(a, u, "BMC address")
}

// bmcNeeds: a node of a built-in BMC type names its BMC's address and
// credentials.
func (v *validator) bmcNeeds(n *Node, typ string, pos Pos) {
	kind, known := map[string]string{"ipmi": "an ipmi", "redfish": "a redfish"}[typ]
	if !known {
		return
	}
	name, o := n.Metadata.Name, &n.Spec.OOB
	if o.Address == "" {
		v.r.errorf(RuleOOB, KindNode, name, pos, "%s node needs oob.address, the IP address of its BMC", kind)
	}
	if o.Credentials == nil {
		v.r.errorf(RuleOOB, KindNode, name, pos, "%s node needs oob.credentials (set them on the node or a host profile)", kind)
	}
}
